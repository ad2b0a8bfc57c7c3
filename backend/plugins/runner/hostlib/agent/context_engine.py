"""The base class of a context engine, as plugins written for the familiar
Python plugin API subclass it (``from agent.context_engine import
ContextEngine``). A registered engine replaces Atrium's summarizer: its
compress() receives the messages to fold and returns the new transcript.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any, Dict, List, Optional

MEMORY_CONTEXT_MAX_CHARS = 6_000


def sanitize_memory_context(memory_context: str) -> str:
    text = (memory_context or "").strip()
    if len(text) <= MEMORY_CONTEXT_MAX_CHARS:
        return text
    return text[:4_000] + "\n...[memory provider context truncated]...\n" + text[-1_500:]


class ContextEngine(ABC):
    """Decides how a transcript is compacted. Atrium calls compress(messages,
    current_tokens=, focus_topic=, force=, memory_context=) when it compacts;
    an unchanged or empty result means nothing was compacted."""

    last_prompt_tokens: int = 0
    last_completion_tokens: int = 0
    last_total_tokens: int = 0
    threshold_tokens: int = 0
    context_length: int = 0
    compression_count: int = 0
    threshold_percent: float = 0.75
    protect_first_n: int = 3
    protect_last_n: int = 6
    emit_automatic_compaction_status: bool = True

    @property
    @abstractmethod
    def name(self) -> str:
        """Short identifier."""

    @abstractmethod
    def update_from_response(self, usage: Dict[str, Any]) -> None:
        """Track token usage after a model call."""

    @abstractmethod
    def should_compress(self, prompt_tokens: int = None) -> bool:
        """Whether to compact now."""

    def should_compress_info(self, prompt_tokens: int = None):
        return self.should_compress(prompt_tokens), None

    @abstractmethod
    def compress(self, messages: List[Dict[str, Any]], current_tokens: Optional[int] = None,
                 focus_topic: Optional[str] = None, force: bool = False,
                 memory_context: str = "") -> List[Dict[str, Any]]:
        """Return the compacted list of messages."""

    def prune_tool_results_only(self, messages, current_tokens=None):
        return messages, 0

    def select_context(self, request_messages, *, conversation_messages=None, incoming_message=None,
                       budget_tokens=0):
        return None

    def on_turn_complete(self, messages, usage=None, **kwargs):
        return None

    def should_compress_preflight(self, messages) -> bool:
        return False

    def has_content_to_compress(self, messages) -> bool:
        return True

    def on_session_start(self, session_id: str, **kwargs) -> None:
        return None

    def on_session_end(self, session_id: str, messages) -> None:
        return None

    def on_session_reset(self) -> None:
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    def get_tool_schemas(self) -> List[Dict[str, Any]]:
        return []

    def handle_tool_call(self, name: str, args: Dict[str, Any], **kwargs) -> str:
        return json.dumps({"error": f"Unknown context engine tool: {name}"})

    def get_status(self) -> Dict[str, Any]:
        last = max(self.last_prompt_tokens, 0)
        return {
            "last_prompt_tokens": last,
            "threshold_tokens": self.threshold_tokens,
            "context_length": self.context_length,
            "usage_percent": min(100, last / self.context_length * 100) if self.context_length else 0,
            "compression_count": self.compression_count,
        }

    def update_model(self, model: str, context_length: int, base_url: str = "", api_key: str = "",
                     provider: str = "", api_mode: str = "") -> None:
        self.context_length = context_length
        self.threshold_tokens = int(context_length * self.threshold_percent)
