"""The inner link of an llm_execution chain: records the request it was
handed (the model an outer plugin routed it to) and hands it on."""

import json
import os

_dir = None


def route(request, next_call, **kwargs):
    text = [m["content"] for m in request["messages"] if m["role"] == "user"][-1]
    with open(os.path.join(_dir, "routed.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"model": request["model"], "text": text}) + "\n")
    return next_call(request)


def register(ctx):
    global _dir
    _dir = ctx.work_dir
    ctx.register_middleware("llm_execution", route)
