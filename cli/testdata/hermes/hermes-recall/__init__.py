"""A memory provider in the shape public providers have: it subclasses
agent.memory_provider.MemoryProvider and records every call the host makes."""

import json
import os

from agent.memory_provider import MemoryProvider


class Recall(MemoryProvider):
    def __init__(self, folder):
        self.folder = folder
        self.facts = []
        self.session_id = None

    def _record(self, method, **fields):
        with open(os.path.join(self.folder, "recall.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"method": method, **fields}, default=str) + "\n")

    @property
    def name(self):
        return "recall"

    def is_available(self):
        self._record("is_available")
        return True

    def initialize(self, session_id, **kwargs):
        self.session_id = session_id
        self._record("initialize", session_id=session_id, kwargs=kwargs)

    def system_prompt_block(self):
        self._record("system_prompt_block")
        return "Recall is on: facts you state are remembered."

    def on_turn_start(self, turn_number, message, **kwargs):
        self._record("on_turn_start", turn_number=turn_number, message=message, kwargs=sorted(kwargs))

    def prefetch(self, query, *, session_id=""):
        self._record("prefetch", query=query, session_id=session_id)
        if self.facts:
            return "RECALLED: " + "; ".join(self.facts)
        return ""

    def sync_turn(self, user_content, assistant_content, *, session_id="", messages=None):
        self._record("sync_turn", user_content=user_content, assistant_content=assistant_content,
                     session_id=session_id, roles=[m["role"] for m in messages or []])
        if user_content.startswith("remember "):
            self.facts.append(user_content[len("remember "):])

    def queue_prefetch(self, query, *, session_id=""):
        self._record("queue_prefetch", query=query, session_id=session_id)

    def get_tool_schemas(self):
        return [{"name": "recall_search", "description": "Search remembered facts",
                 "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]

    def handle_tool_call(self, tool_name, args, **kwargs):
        self._record("handle_tool_call", tool_name=tool_name, args=args, kwargs=sorted(kwargs))
        return json.dumps({"facts": [f for f in self.facts if args.get("q", "") in f]})

    def on_pre_compress(self, messages):
        self._record("on_pre_compress", count=len(messages))
        return "facts so far: " + "; ".join(self.facts)

    def on_session_switch(self, new_session_id, *, parent_session_id="", reset=False, rewound=False, **kwargs):
        self._record("on_session_switch", new_session_id=new_session_id, parent_session_id=parent_session_id,
                     reset=reset, rewound=rewound)
        self.session_id = new_session_id

    def on_session_end(self, messages):
        self._record("on_session_end", count=len(messages))

    def on_delegation(self, task, result, *, child_session_id="", **kwargs):
        self._record("on_delegation", task=task, result=result, child_session_id=child_session_id,
                     session_id=self.session_id)

    def on_memory_write(self, action, target, content, metadata=None):
        self._record("on_memory_write", action=action, target=target, content=content, metadata=metadata)

    def shutdown(self):
        self._record("shutdown")


def register(ctx):
    ctx.register_memory_provider(Recall(ctx.work_dir))
