"""The conversation a plugin call belongs to, per call, as plugins written
for the familiar Python plugin API read it (``from gateway.session_context
import get_session_env``). Written for Atrium.

A plugin runs one process per profile, and its tool calls and slash
commands from different conversations run side by side, each on a thread
of its own. The runner binds each call's conversation here (context
variables, so they do not leak from one call into another), and the
process's os.environ answers the HERMES_SESSION_* names from them too:
os.environ["HERMES_SESSION_KEY"] read during a call is that call's key,
and a subprocess.Popen the call starts with env=None gets them too
(os.system and os.exec* inherit the process's own environment).
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any

__all__ = ["get_session_env", "set_session_vars", "clear_session_vars", "reset_session_vars",
           "session_context_engaged", "bound_value", "NAMES"]

_UNSET: Any = object()

# The names, in set_session_vars' positional order.
NAMES = ("HERMES_SESSION_PLATFORM", "HERMES_SESSION_SOURCE", "HERMES_SESSION_CHAT_ID", "HERMES_SESSION_CHAT_TYPE",
         "HERMES_SESSION_CHAT_NAME", "HERMES_SESSION_THREAD_ID", "HERMES_SESSION_USER_ID",
         "HERMES_SESSION_USER_ID_ALT", "HERMES_SESSION_USER_NAME", "HERMES_SESSION_SCOPE_ID",
         "HERMES_SESSION_KEY", "HERMES_SESSION_ID", "HERMES_UI_SESSION_ID", "HERMES_SESSION_MESSAGE_ID",
         "HERMES_SESSION_PROFILE", "HERMES_CRON_SESSION")
_ARGS = ("platform", "source", "chat_id", "chat_type", "chat_name", "thread_id", "user_id", "user_id_alt",
         "user_name", "scope_id", "session_key", "session_id", "ui_session_id", "message_id", "profile", "cron_session")
_VARS = {name: ContextVar(name, default=_UNSET) for name in NAMES}
_engaged = False


def session_context_engaged() -> bool:
    """Whether a conversation was ever bound in this process."""
    return _engaged


def set_session_vars(**values: Any) -> list:
    """Binds the conversation of the current call (keyword arguments:
    platform, chat_id, user_id, session_key, session_id, ...; others are
    ignored). Returns tokens for clear_session_vars."""
    global _engaged
    _engaged = True
    tokens = []
    for arg, name in zip(_ARGS, NAMES):
        tokens.append(_VARS[name].set(str(values.get(arg) or "")))
    return tokens


def clear_session_vars(tokens: list | None = None) -> None:
    """Unbinds: every name reads empty (not the process environment)."""
    for var in _VARS.values():
        var.set("")


def reset_session_vars() -> None:
    """Forgets the binding here: the names read the process environment."""
    for var in _VARS.values():
        var.set(_UNSET)


def bound_value(name: str):
    """The value the current call binds for name; None when it binds none."""
    var = _VARS.get(name)
    if var is None:
        return None
    value = var.get()
    return None if value is _UNSET else value


def get_session_env(name: str, default: str = "") -> str:
    """os.getenv for the HERMES_SESSION_* names, per call: the bound value
    when the call binds one (even empty), else the environment's."""
    value = bound_value(name)
    if value is not None:
        return value
    return os.getenv(name, default)
