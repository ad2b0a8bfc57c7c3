"""An approval notifier in the shape public ones have: it reads the
familiar arguments of the approval hooks by name, the rest through
**kwargs, and would pop a desktop notification (here: a JSON line)."""

import json
import os

_dir = None


def _note(**fields):
    with open(os.path.join(_dir, "notify.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(fields) + "\n")


def _on_approval_request(command, description, pattern_key, pattern_keys, session_key, surface, **kwargs):
    _note(hook="pre_approval_request", command=command, description=description, pattern_key=pattern_key,
          pattern_keys=pattern_keys, session_key=session_key, surface=surface, has_choice="choice" in kwargs)


def _on_approval_response(command, choice, surface="", **kwargs):
    _note(hook="post_approval_response", command=command, choice=choice, surface=surface)


def register(ctx):
    global _dir
    _dir = ctx.work_dir
    ctx.register_hook("pre_approval_request", _on_approval_request)
    ctx.register_hook("post_approval_response", _on_approval_response)
