"""A context engine that wraps the agent's built-in compressor and records
what it did (wrapper.jsonl), the shape of public engines that add auditing
or budgets around the built-in compression."""

import json
import os

from agent.context_compressor import ContextCompressor
from agent.context_engine import ContextEngine


class Wrapper(ContextEngine):
    def __init__(self, folder):
        self.folder = folder
        self._delegate = ContextCompressor(model="unknown", protect_first_n=1, protect_last_n=2, quiet_mode=True)

    @property
    def name(self):
        return "wrapper"

    def update_model(self, model, context_length, base_url="", api_key="", provider="", api_mode=""):
        self._delegate.update_model(model, context_length, base_url=base_url, api_key=api_key,
                                    provider=provider, api_mode=api_mode)

    def update_from_response(self, usage):
        self._delegate.update_from_response(usage)

    def should_compress(self, prompt_tokens=None):
        return self._delegate.should_compress(prompt_tokens)

    def compress(self, messages, current_tokens=None, focus_topic=None, **kwargs):
        out = self._delegate.compress(messages, current_tokens=current_tokens, focus_topic=focus_topic)
        with open(os.path.join(self.folder, "wrapper.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"in": len(messages), "out": len(out), "count": self._delegate.compression_count,
                                "threshold": self._delegate.threshold_tokens,
                                "last_prompt_tokens": self._delegate.last_prompt_tokens}) + "\n")
        return out


def register(ctx):
    ctx.register_context_engine(Wrapper(ctx.work_dir))
