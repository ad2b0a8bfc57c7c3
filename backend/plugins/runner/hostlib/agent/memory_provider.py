"""The base class of an external memory provider, as plugins written for the
familiar Python plugin API subclass it (``from agent.memory_provider import
MemoryProvider``). Atrium's runner drives a registered provider from the turn
loop and compaction; this module only defines the shape and its defaults.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

PRE_COMPRESS_CHECKPOINT_API_VERSION = 2
INDICATOR_GLYPH = "\N{BRAIN}"


@dataclass(frozen=True)
class RecallStatus:
    """What the last prefetch injected (for a visible "memory used" note)."""

    provider_label: str
    count: int
    glyph: str = INDICATOR_GLYPH


TRIVIAL_PROMPT_RE = re.compile(
    r"^(yes|no|ok|okay|sure|thanks|thank you|y|n|yep|nope|yeah|nah|hi|hey|hello|yo|sup|"
    r"continue|go ahead|do it|proceed|got it|cool|nice|great|done|next|lgtm|k)"
    r"[\s!?.:;,\"'~()\[\]{}<>*&^%$#@+=`]*$",
    re.IGNORECASE,
)


def is_trivial_prompt(text: Optional[str]) -> bool:
    """True for an empty prompt, a slash command or a bare acknowledgement:
    nothing worth recalling memory for."""
    if not text or not text.strip():
        return True
    stripped = text.strip()
    return stripped.startswith("/") or bool(TRIVIAL_PROMPT_RE.match(stripped))


class MemoryProvider(ABC):
    """Base class of a memory provider. Atrium calls, in this order:
    is_available(), initialize(session_id, hermes_home=, platform=,
    agent_context=, agent_identity=), system_prompt_block() when a session's
    system prompt is assembled, prefetch(query, session_id=) before the
    model call of each turn, sync_turn(...) and queue_prefetch(...) after
    it, get_tool_schemas() / handle_tool_call(...) for its tools,
    on_pre_compress(messages) before a compaction, on_session_switch(...)
    when the conversation's session changes, on_session_end(messages) at a
    real session boundary, on_delegation(task, result, child_session_id=)
    when a delegate child ends, shutdown() when the plugin stops."""

    pre_compress_checkpoint_api_version = 1

    @property
    @abstractmethod
    def name(self) -> str:
        """Short identifier, matched by ``memory.provider`` in config.yaml."""

    @abstractmethod
    def is_available(self) -> bool:
        """Whether the provider is configured and usable (no network)."""

    @abstractmethod
    def initialize(self, session_id: str, **kwargs) -> None:
        """Prepare for a session. kwargs: hermes_home, platform,
        agent_context ("primary", "subagent" in a delegate child's session,
        "cron"), agent_identity (and user_id on a gateway, parent_session_id
        for a subagent)."""

    def initialize_for_inspection(self, session_id: str, **kwargs) -> None:
        self.initialize(session_id=session_id, **kwargs)

    def unavailable_reason(self) -> str:
        return ""

    def system_prompt_block(self) -> str:
        return ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return ""

    def queue_prefetch(self, query: str, *, session_id: str = "") -> None:
        return None

    def recall_status(self) -> Optional[RecallStatus]:
        return None

    def sync_turn(self, user_content: str, assistant_content: str, *, session_id: str = "",
                  messages: Optional[List[Dict[str, Any]]] = None) -> None:
        return None

    @abstractmethod
    def get_tool_schemas(self) -> List[Dict[str, Any]]:
        """Tool schemas in the OpenAI function format ([] for none)."""

    def handle_tool_call(self, tool_name: str, args: Dict[str, Any], **kwargs) -> str:
        raise NotImplementedError(f"Provider {self.name} does not handle tool {tool_name}")

    def shutdown(self) -> None:
        return None

    def on_turn_start(self, turn_number: int, message: str, **kwargs) -> None:
        return None

    def on_session_end(self, messages: List[Dict[str, Any]]) -> None:
        return None

    def on_session_switch(self, new_session_id: str, *, parent_session_id: str = "", reset: bool = False,
                          rewound: bool = False, **kwargs) -> None:
        return None

    def on_pre_compress(self, messages: List[Dict[str, Any]]) -> str:
        return ""

    def on_delegation(self, task: str, result: str, *, child_session_id: str = "", **kwargs) -> None:
        return None

    def get_config_schema(self) -> List[Dict[str, Any]]:
        return []

    def save_config(self, values: Dict[str, Any], hermes_home: str) -> None:
        return None

    def on_memory_write(self, action: str, target: str, content: str,
                        metadata: Optional[Dict[str, Any]] = None) -> None:
        return None

    def backup_paths(self) -> List[str]:
        return []
