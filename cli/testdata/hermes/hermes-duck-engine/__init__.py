"""A context engine in the shape some public engines have: a plain class
with name, should_compress, compress and update_from_response, no
ContextEngine base. It keeps the first message and the last two and puts a
note in place of the rest, and records what it was given (duck.jsonl),
context_length among it (which the base class's update_model, used for the
method it lacks, sets on it). A first, incomplete object is refused."""

import json
import os


class Half:
    name = "half"

    def should_compress(self, prompt_tokens=None):
        return False


class DuckEngine:
    def __init__(self, folder):
        self.folder = folder
        self.usage = []

    @property
    def name(self):
        return "duck"

    def update_from_response(self, usage):
        self.usage.append(usage.get("prompt_tokens"))

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        with open(os.path.join(self.folder, "duck.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"count": len(messages), "force": force, "responses": len(self.usage),
                                "context_length": getattr(self, "context_length", None),
                                "threshold_tokens": getattr(self, "threshold_tokens", None)}) + "\n")
        if len(messages) <= 3:
            return messages
        return messages[:1] + [{"role": "user", "content": "[duck folded %d messages]" % (len(messages) - 3)}] + messages[-2:]


def register(ctx):
    ctx.register_context_engine(Half())
    ctx.register_context_engine(DuckEngine(ctx.work_dir))
