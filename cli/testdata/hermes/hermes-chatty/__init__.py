"""Prints and logs the way plugin authors debug: print() and
logging.getLogger(__name__).info(). /chatty N prints N lines."""

import logging

logger = logging.getLogger("chatty")


def chatty(raw_args):
    n = int(raw_args.strip() or "1")
    for i in range(n):
        print("chatty line %d" % i)
    logger.info("chatty logged %d lines", n)
    return "printed %d" % n


def register(ctx):
    ctx.register_command("chatty", chatty, description="print N lines", args_hint="N")
