"""A tool that takes its time (wait_a_while), so a person can stop the
turn that called it."""

import time


def wait_a_while(args, **kwargs):
    time.sleep(min(float(args.get("seconds", 5)), 60))
    return "waited"


def register(ctx):
    ctx.register_tool(name="wait_a_while", toolset="slow",
                      schema={"name": "wait_a_while", "description": "Wait a number of seconds",
                              "parameters": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
                      handler=wait_a_while)
