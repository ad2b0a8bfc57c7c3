"""Execution middleware in the shapes public plugins use: a tool cache that
answers without running the tool, an argument rewrite, a result stamp; a
model-call budget that stops a call (LLMExecutionBlocked), a canned answer
in the model's place, a fallback when the model call fails, and a timer
that hands the response on. Each call is recorded in calls.jsonl."""

import json
import os
import time

from hermes_cli.middleware import LLMExecutionBlocked

_dir = None


def _record(**fields):
    with open(os.path.join(_dir, "calls.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps(fields) + "\n")


def broken(**kwargs):
    raise ValueError("this callback is skipped: it raised before next_call")


def tool_cache(tool_name, args, next_call, session_id, **kwargs):
    text = args.get("text", "")
    if text == "cached":
        _record(kind="tool", tool=tool_name, cached=True)
        return "from the cache"
    if text == "hang":
        time.sleep(60)  # past the callback timeout: the call goes on without this plugin
    if text.startswith("shout"):
        args = dict(args, text=text.upper())
    result = next_call(args)
    _record(kind="tool", tool=tool_name, result=result, session=bool(session_id))
    return result + " [checked]"


def _last_user(request):
    for m in reversed(request["messages"]):
        if m["role"] == "user":
            return m["content"]
    return ""


def budget(request, next_call, model, **kwargs):
    text = _last_user(request)
    if "over budget" in text:
        raise LLMExecutionBlocked("the session's budget is spent", metadata={"budget_usd": 5.0})
    if "canned" in text:
        _record(kind="llm", canned=True)
        return {"choices": [{"message": {"role": "assistant", "content": "a canned answer"}}]}
    start = time.monotonic()
    try:
        response = next_call(dict(request, model="routed-model"))
    except Exception as exc:  # the model call failed: answer something
        _record(kind="llm", fallback=str(exc)[:80])
        if "fallback" in text:
            return {"choices": [{"message": {"role": "assistant", "content": "a fallback answer"}}]}
        raise
    _record(kind="llm", content=response.choices[0].message.content, seconds=time.monotonic() - start >= 0,
            tokens=response.usage["total_tokens"] >= 0)
    return response


def register(ctx):
    global _dir
    _dir = ctx.work_dir
    ctx.register_middleware("tool_execution", broken)
    ctx.register_middleware("tool_execution", tool_cache)
    ctx.register_middleware("llm_execution", budget)
