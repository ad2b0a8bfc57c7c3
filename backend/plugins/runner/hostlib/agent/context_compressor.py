"""The built-in compressor, as plugins written for the familiar Python plugin
API find it (``from agent.context_compressor import ContextCompressor``):
context engines that wrap it, and fall back to it, construct one and call
its compress().

Atrium's own words: it keeps the first protect_first_n messages and the last
protect_last_n, and puts in place of the ones between a single summary
written by the summarizer the Atrium host compacts with
(compaction.summarizer: offline, or the configured model). A tool result is
never separated from the call that asked for it.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from agent.context_engine import ContextEngine

SUMMARY_PREFIX = "[Summary of the earlier conversation]"


class ContextCompressor(ContextEngine):
    """Summarizes the middle of a transcript. Constructor arguments of the
    familiar compressor that Atrium has no use for (base_url, api_key,
    provider, quiet_mode, ...) are accepted and ignored."""

    def __init__(self, model: str = "", threshold_percent: float = 0.50, protect_first_n: int = 3,
                 protect_last_n: int = 20, summary_target_ratio: float = 0.20,
                 config_context_length: Optional[int] = None, **kwargs: Any) -> None:
        self.model = model
        self.threshold_percent = float(threshold_percent)
        self.protect_first_n = max(0, int(protect_first_n))
        self.protect_last_n = max(1, int(protect_last_n))
        self.summary_target_ratio = float(summary_target_ratio)
        self.context_length = int(config_context_length or 0)
        self.threshold_tokens = int(self.context_length * self.threshold_percent)
        self.last_prompt_tokens = 0
        self.last_completion_tokens = 0
        self.last_total_tokens = 0
        self.compression_count = 0

    @property
    def name(self) -> str:
        return "compressor"

    def update_from_response(self, usage: Dict[str, Any]) -> None:
        usage = usage or {}
        self.last_prompt_tokens = int(usage.get("prompt_tokens") or usage.get("input_tokens") or 0)
        self.last_completion_tokens = int(usage.get("completion_tokens") or usage.get("output_tokens") or 0)
        self.last_total_tokens = int(usage.get("total_tokens") or self.last_prompt_tokens + self.last_completion_tokens)

    def should_compress(self, prompt_tokens: Optional[int] = None) -> bool:
        tokens = self.last_prompt_tokens if prompt_tokens is None else int(prompt_tokens)
        return self.threshold_tokens > 0 and tokens >= self.threshold_tokens

    def has_content_to_compress(self, messages: List[Dict[str, Any]]) -> bool:
        head, middle, _ = self._split(messages)
        return len(middle) >= 2

    def _split(self, messages):
        n = len(messages)
        start = min(self.protect_first_n, n)
        end = max(start, n - self.protect_last_n)
        # A tool result stays with the assistant message that asked for it.
        while start < end and messages[start].get("role") == "tool":
            start += 1
        while end > start and messages[end].get("role") == "tool":
            end -= 1
        return messages[:start], messages[start:end], messages[end:]

    def compress(self, messages: List[Dict[str, Any]], current_tokens: Optional[int] = None,
                 focus_topic: Optional[str] = None, force: bool = False, memory_context: str = "",
                 **kwargs: Any) -> List[Dict[str, Any]]:
        """head + [one summary message] + tail; the messages unchanged when
        fewer than two lie between, or when no summary can be had."""
        head, middle, tail = self._split(list(messages or []))
        if len(middle) < 2:
            return list(messages or [])
        import atrium_host

        if atrium_host.call is None:
            return list(messages or [])
        folded = [{"role": str(m.get("role") or "user"), "content": _text(m.get("content"))} for m in middle]
        try:
            text = atrium_host.call("summarize", {"messages": folded, "focus": focus_topic or ""})
        except Exception:  # noqa: BLE001 - an unavailable summary compacts nothing
            return list(messages or [])
        text = str(text or "").strip()
        if not text:
            return list(messages or [])
        if memory_context and memory_context.strip():
            text += "\n\n" + memory_context.strip()
        self.compression_count += 1
        return head + [{"role": "user", "content": SUMMARY_PREFIX + "\n" + text}] + tail


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)
