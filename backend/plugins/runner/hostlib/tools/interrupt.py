"""Interrupts for tool calls, as plugins written for the familiar Python
plugin API read them (``from tools.interrupt import is_interrupted``).
Written for Atrium.

Each tool call and slash command runs on a thread of its own in the plugin
runner. When the call is cancelled (a person stopped the turn, /stop on a
chat platform, the call's time ran out) the runner sets the interrupt of
that thread: a tool that polls is_interrupted() can stop early and clean up.
The host no longer waits for the answer of a cancelled call.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

__all__ = ["set_interrupt", "is_interrupted", "is_thread_interrupted", "get_interrupt_reason",
           "clear_current_thread_interrupt", "run_if_not_interrupted", "request_yield",
           "is_thread_yield_requested", "consume_yield"]

_lock = threading.Lock()
_interrupted: dict[int, Optional[str]] = {}  # thread ident -> reason (None: none given)
_yields: set[int] = set()


def set_interrupt(active: bool, thread_id: Optional[int] = None, *, reason: Optional[str] = None) -> None:
    """Sets (active) or clears the interrupt of thread_id (the current
    thread when None)."""
    tid = thread_id if thread_id is not None else threading.get_ident()
    with _lock:
        if active:
            _interrupted[tid] = reason or None
        else:
            _interrupted.pop(tid, None)


def is_interrupted() -> bool:
    """Whether the current thread's call was interrupted."""
    return is_thread_interrupted(threading.get_ident())


def is_thread_interrupted(thread_id: Optional[int]) -> bool:
    if thread_id is None:
        return False
    with _lock:
        return thread_id in _interrupted


def get_interrupt_reason() -> Optional[str]:
    """Why the current thread's call was interrupted, when that was said."""
    with _lock:
        return _interrupted.get(threading.get_ident())


def clear_current_thread_interrupt() -> None:
    set_interrupt(False)


def run_if_not_interrupted(callback: Callable[[], None]) -> bool:
    """Runs callback unless the current thread is interrupted (atomically
    with that check); False when it did not run. callback must not block
    or call back into this module."""
    tid = threading.get_ident()
    with _lock:
        if tid in _interrupted:
            return False
        callback()
        return True


def request_yield(thread_id: int) -> None:
    """Asks the call on thread_id to hand its work to the background and
    return (Atrium itself never asks)."""
    with _lock:
        _yields.add(thread_id)


def is_thread_yield_requested(thread_id: Optional[int]) -> bool:
    if thread_id is None:
        return False
    with _lock:
        return thread_id in _yields


def consume_yield(thread_id: Optional[int]) -> bool:
    if thread_id is None:
        return False
    with _lock:
        if thread_id in _yields:
            _yields.discard(thread_id)
            return True
        return False
