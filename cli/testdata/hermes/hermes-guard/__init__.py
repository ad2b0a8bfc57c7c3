"""A read-only guardrail: writes are blocked, shouting is toned down, and a
guard that crashes must not let the call through."""

import json
import os
import time

try:
    from hermes_cli.profiles import get_active_profile_name
except ImportError:  # a guard that cannot read its profile guards nothing
    get_active_profile_name = None

_ctx = None


def guard(tool_name, args, task_id, session_id, tool_call_id, turn_id):
    with open(os.path.join(_ctx.work_dir, "guard.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"tool_name": tool_name, "args": args, "task_id": task_id, "session_id": session_id,
                            "tool_call_id": tool_call_id, "turn_id": turn_id,
                            "profile": get_active_profile_name() if get_active_profile_name else None}) + "\n")
    if tool_name == "write_note":
        return {"action": "block", "message": "read-only mode: write_note is not allowed"}
    if tool_name == "echo" and isinstance(args.get("text"), str) and args["text"].isupper():
        return {"action": "modify", "args": {"text": args["text"].lower()}}
    if tool_name == "big_output":
        raise RuntimeError("the guard could not decide")
    if tool_name == "read_notes" and args.get("slow"):
        time.sleep(30)
    if tool_name == "read_notes" and args.get("ask"):
        return {"action": "approve", "message": "reading notes needs a yes"}
    return None


def register(ctx):
    global _ctx
    _ctx = ctx
    ctx.register_hook("pre_tool_call", guard)
