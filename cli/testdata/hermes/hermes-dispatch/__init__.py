"""A plugin that runs a tool by name through ctx.dispatch_tool: /dispatch NAME [JSON]."""

import json

_ctx = None


def dispatch(raw_args, session_id=None):
    name, _, rest = (raw_args or "").strip().partition(" ")
    args = json.loads(rest) if rest.strip() else {}
    return "dispatched %s: %s" % (name, _ctx.dispatch_tool(name, args))


def register(ctx):
    global _ctx
    _ctx = ctx
    ctx.register_command("dispatch", handler=dispatch, description="run a tool by name", args_hint="NAME [JSON]")
