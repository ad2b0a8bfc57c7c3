"""A memory provider in the shape some public providers have: no
register(ctx), only a MemoryProvider subclass made without arguments (and an
abstract helper class before it, which the loader passes over). It keeps its
facts and a record of every call (memory.jsonl) in its own storage."""

import json

from agent.memory_provider import MemoryProvider
from hermes_constants import get_hermes_home
from plugins.plugin_storage import plugin_data_dir


class AbstractStore(MemoryProvider):
    """Shared plumbing; abstract, so never made."""

    def _record(self, method, **fields):
        with open(plugin_data_dir("hermes-bare-memory") / "memory.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps({"method": method, **fields}) + "\n")


class BareMemory(AbstractStore):
    name = "bare"  # a class attribute serves as well as a property

    def __init__(self):
        self.facts = []
        self.home = str(get_hermes_home())

    def is_available(self):
        self._record("is_available")
        return True

    def initialize(self, session_id, **kwargs):
        self._record("initialize", session_id=session_id, hermes_home=kwargs.get("hermes_home"),
                     agent_context=kwargs.get("agent_context"), same_home=kwargs.get("hermes_home") == self.home)

    def get_tool_schemas(self):
        return []

    def prefetch(self, query, *, session_id=""):
        self._record("prefetch", query=query, session_id=session_id)
        return "[[context]] remembered: " + "; ".join(self.facts) if self.facts else ""

    def sync_turn(self, user_content, assistant_content, *, session_id="", messages=None):
        self._record("sync_turn", user_content=user_content, session_id=session_id)
        if user_content.startswith("remember "):
            self.facts.append(user_content[len("remember "):])
