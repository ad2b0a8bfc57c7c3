"""A context engine: it replaces the summarizer, offers the model a tool, and
records the lifecycle calls it receives (engine.jsonl), each with the id of
the engine object that received it."""

import json
import os

from agent.context_engine import ContextEngine


class Pruner(ContextEngine):
    def __init__(self, folder, compress_above=0, prune_tools=False):
        self.folder = folder
        self.compress_above = compress_above  # 0: never asks for a compaction
        self.prune_tools = prune_tools  # False: prunes no tool output
        self.session_id = None

    @property
    def name(self):
        return "pruner"

    def _record(self, method, **fields):
        with open(os.path.join(self.folder, "engine.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(method=method, engine=id(self), **fields)) + "\n")

    def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode=""):
        self._record("update_model", model=model, context_length=context_length, provider=provider)
        super().update_model(model, context_length)

    def on_session_start(self, session_id, **kwargs):
        self._record("on_session_start", session_id=session_id, kwargs=kwargs)
        self.session_id = session_id

    def update_from_response(self, usage):
        self._record("update_from_response", usage=usage)

    def should_compress(self, prompt_tokens=None):
        self._record("should_compress", prompt_tokens=prompt_tokens)
        return bool(self.compress_above) and (prompt_tokens or 0) >= self.compress_above

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        with open(os.path.join(self.folder, "pruner.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"count": len(messages), "current_tokens": current_tokens, "focus_topic": focus_topic,
                                "force": force, "memory_context": memory_context, "engine": id(self),
                                "session_id": self.session_id}) + "\n")
        if focus_topic == "keep everything":
            return messages
        keep = [m for m in messages if m["role"] == "system" and not m["content"].startswith("[pruned")]
        rest = [m for m in messages if m not in keep]
        if len(rest) <= 2:
            return messages  # nothing to prune: unchanged
        dropped = len(rest) - 2
        return keep + [{"role": "system", "content": "[pruned %d messages]" % dropped}] + rest[-2:]

    def prune_tool_results_only(self, messages, current_tokens=None):
        tools = [i for i, m in enumerate(messages) if m["role"] == "tool" and not m["content"].startswith("[engine")]
        self._record("prune_tool_results_only", tools=len(tools), current_tokens=current_tokens)
        if not self.prune_tools or not tools:
            return messages, 0
        out = [dict(m) for m in messages]
        for i in tools:
            out[i]["content"] = "[engine pruned %d characters]" % len(messages[i]["content"])
        return out, len(tools)

    def get_tool_schemas(self):
        return [
            {"name": "pruned_expand", "description": "Show what the pruner folded away.",
             "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
            {"description": "a schema without a name, which no host may offer"},
        ]

    async def handle_tool_call(self, name, args, **kwargs):
        messages = kwargs.get("messages") or []
        self._record("handle_tool_call", name=name, args=args, messages=len(messages),
                     last=messages[-1]["content"] if messages else None)
        return json.dumps({"expanded": args.get("query"), "session": self.session_id})

    def on_session_end(self, session_id, messages):
        self._record("on_session_end", session_id=session_id, messages=len(messages))


def register(ctx):
    ctx.register_context_engine(Pruner(ctx.work_dir, int(ctx.get_config("compress_above", 0) or 0),
                                       bool(ctx.get_config("prune_tools", False))))
