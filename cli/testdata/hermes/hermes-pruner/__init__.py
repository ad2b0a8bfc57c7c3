"""A context engine: it replaces the summarizer."""

import json
import os

from agent.context_engine import ContextEngine


class Pruner(ContextEngine):
    def __init__(self, folder):
        self.folder = folder

    @property
    def name(self):
        return "pruner"

    def update_from_response(self, usage):
        pass

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        with open(os.path.join(self.folder, "pruner.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"count": len(messages), "current_tokens": current_tokens, "focus_topic": focus_topic,
                                "force": force, "memory_context": memory_context}) + "\n")
        keep = [m for m in messages if m["role"] == "system" and not m["content"].startswith("[pruned")]
        rest = [m for m in messages if m not in keep]
        if len(rest) <= 2:
            return messages  # nothing to prune: unchanged
        dropped = len(rest) - 2
        return keep + [{"role": "system", "content": "[pruned %d messages]" % dropped}] + rest[-2:]


def register(ctx):
    ctx.register_context_engine(Pruner(ctx.work_dir))
