"""The middleware vocabulary (``from hermes_cli.middleware import
LLMExecutionBlocked``). Written for Atrium: the runner runs the chains; this
module names the kinds and the exception a plugin raises to stop a model
call."""

from __future__ import annotations

from typing import Any, Dict

OBSERVER_SCHEMA_VERSION = "hermes.observer.v1"
MIDDLEWARE_SCHEMA_VERSION = "hermes.middleware.v1"

TOOL_REQUEST_MIDDLEWARE = "tool_request"
TOOL_EXECUTION_MIDDLEWARE = "tool_execution"
LLM_REQUEST_MIDDLEWARE = "llm_request"
LLM_EXECUTION_MIDDLEWARE = "llm_execution"
API_REQUEST_MIDDLEWARE = LLM_REQUEST_MIDDLEWARE
API_EXECUTION_MIDDLEWARE = LLM_EXECUTION_MIDDLEWARE

VALID_MIDDLEWARE = {TOOL_REQUEST_MIDDLEWARE, TOOL_EXECUTION_MIDDLEWARE, LLM_REQUEST_MIDDLEWARE, LLM_EXECUTION_MIDDLEWARE}


class LLMExecutionBlocked(Exception):
    """Raised by an ``llm_execution`` callback to stop the model call: the
    turn fails with ``reason``. Any other exception a callback raises before
    it calls ``next_call`` only skips that callback."""

    def __init__(self, reason: str, *, metadata: Dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.metadata = metadata or {}
