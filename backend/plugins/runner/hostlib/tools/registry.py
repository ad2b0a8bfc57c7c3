"""The tool registry's helpers, as plugins written for the familiar Python
plugin API import them (``from tools.registry import registry, tool_error,
tool_result``). Written for Atrium.

tool_error and tool_result build the JSON strings tool handlers return.
registry.register(...) registers a tool of this plugin, as
ctx.register_tool would, while the plugin loads (at import or in
register(ctx)): Atrium learns a plugin's tools when it starts, so a later
registration is refused with a warning. registry.dispatch(name, args) calls
a tool through the host, as ctx.dispatch_tool does. The rest of the
familiar registry (other plugins' entries, toolset checks) lives in the
Atrium host, not here: those names are an AttributeError that says so.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Optional

__all__ = ["registry", "tool_error", "tool_result"]

# An error body the model reads is bounded, so a runaway exception text
# cannot fill the conversation.
_MAX_TOOL_ERROR_CHARS = 2048
_TRUNCATED = "… [truncated]"


def tool_error(message: Any, **extra: Any) -> str:
    """'{"error": "<message>", **extra}', the message cut at 2,048
    characters."""
    text = str(message)
    if len(text) > _MAX_TOOL_ERROR_CHARS:
        text = text[:_MAX_TOOL_ERROR_CHARS] + _TRUNCATED
    return json.dumps({"error": text, **extra}, ensure_ascii=False)


def tool_result(data: Any = None, **kwargs: Any) -> str:
    """data as JSON, or the keyword arguments as a JSON object when data is
    None."""
    return json.dumps(data if data is not None else kwargs, ensure_ascii=False)


class _Registry:
    """The part of the familiar tool registry a plugin process can honour."""

    def register(self, name: str, toolset: str, schema: dict, handler: Callable,
                 check_fn: Optional[Callable] = None, requires_env: Optional[list] = None,
                 is_async: bool = False, description: str = "", emoji: str = "",
                 override: bool = False, **_ignored: Any) -> None:
        """Registers a tool of this plugin while it loads."""
        if not isinstance(schema, dict):
            raise ValueError(f"Tool {name!r}: schema must be a dict, got {type(schema).__name__}")
        params = schema.get("parameters")
        if params is not None and not isinstance(params, dict):
            raise ValueError(f"Tool {name!r}: schema['parameters'] must be an object (JSON Schema dict), "
                             f"got {type(params).__name__}")
        import atrium_host

        ctx = atrium_host.plugin
        if ctx is None or ctx.loaded:
            print(f"atrium runner: warning: tools.registry.register({name!r}) after the plugin started is not "
                  "used: Atrium learns a plugin's tools when it loads (register them at import or in register(ctx))",
                  file=sys.stderr)
            return None
        ctx.register_tool(name, toolset, schema, handler, check_fn=check_fn, requires_env=requires_env,
                          is_async=is_async, description=description, emoji=emoji, override=override)
        return None

    def dispatch(self, name: str, args: Optional[dict] = None, **kwargs: Any) -> str:
        """Calls a tool (built-in or another plugin's) through the host and
        returns its result."""
        import atrium_host

        if atrium_host.plugin is None:
            return tool_error(f"Unknown tool: {name}")
        return atrium_host.plugin.dispatch_tool(name, args or {}, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise AttributeError(f"tools.registry.registry.{attr} is not available in Atrium: the tool registry lives "
                             "in the Atrium host; a plugin registers its tools with ctx.register_tool and calls "
                             "one with ctx.dispatch_tool")


registry = _Registry()
