#!/usr/bin/env python3
"""Atrium's Python plugin runner (standard library only).

Usage: python3 atrium_runner.py PLUGIN_DIR

Loads PLUGIN_DIR/__init__.py, calls its register(ctx) and speaks the Atrium
plugin protocol (docs/plugin-protocol.md): JSON-RPC 2.0, one JSON object per
line on stdin/stdout, in both directions (the plugin may ask the host for
things while it answers: ctx.llm, ctx.dispatch_tool, ...). Anything the plugin
prints goes to stderr, which the host logs under the plugin's name.

The ctx it passes is the familiar Python plugin API (the Hermes agent's
register(ctx) API), written for Atrium: hooks, slash and CLI commands, tools,
middleware, memory providers, context engines, system prompt sections,
inter-plugin events and the host's model. Beside it the runner ships the host
modules such plugins import (agent.memory_provider, agent.context_engine,
hermes_cli.profiles, hermes_cli.config, hermes_constants,
plugins.plugin_storage, tools.registry, tools.interrupt,
gateway.session_context) from its hostlib folder. Tool calls and slash
commands run side by side, each on a thread of its own, and the host can
cancel one (the protocol's cancel notification).
"""

import argparse
import contextlib
import contextvars
import copy
import importlib.machinery
import importlib.util
import inspect
import io
import itertools
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import traceback
import types

PROTOCOL_VERSION = 1

_HERE = os.path.dirname(os.path.abspath(__file__))
_HOSTLIB = os.path.join(_HERE, "hostlib")
if os.path.isdir(_HOSTLIB) and _HOSTLIB not in sys.path:
    sys.path.insert(0, _HOSTLIB)


class _HostPackages:
    """Serves the name ``plugins`` (the familiar agent's own package, where
    plugins import plugins.plugin_storage from) out of the hostlib, so no
    folder that merely is called plugins somewhere on the path (the user's
    plugin folder, say) joins it: ``plugins.plugin_storage`` is the host's,
    any other ``plugins.X`` is a clear ImportError. A plugin that ships a
    ``plugins`` package in its own folder keeps it, and its modules."""

    ROOT = os.path.join(_HOSTLIB, "plugins")

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "plugins":
            own = os.path.join(os.path.abspath(_plugin_dir), "plugins") if _plugin_dir else ""
            if own and os.path.isfile(os.path.join(own, "__init__.py")):
                return importlib.util.spec_from_file_location(
                    fullname, os.path.join(own, "__init__.py"), submodule_search_locations=[own])
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = [self.ROOT]
            return spec
        if not fullname.startswith("plugins.") or fullname.count(".") != 1:
            return None
        name = fullname[len("plugins."):]
        ours = path is not None and [str(p) for p in path] == [self.ROOT]
        if not ours and any(os.path.exists(os.path.join(str(p), name + ".py")) or
                            os.path.isdir(os.path.join(str(p), name)) for p in path or []):
            return None  # the plugin's own plugins package has it
        if name == "plugin_storage":
            return importlib.util.spec_from_file_location(fullname, os.path.join(self.ROOT, "plugin_storage.py"))
        if not ours:
            return None
        raise ModuleNotFoundError(
            "No module named %r: in Atrium the package plugins holds only plugins.plugin_storage (the familiar "
            "agent's other plugins.* modules belong to that agent, not to its plugin API)" % fullname, name=fullname)


sys.meta_path.insert(0, _HostPackages())

# The protocol keeps descriptors of its own. Descriptors 0 and 1, which the
# plugin's children and C code use, become /dev/null and stderr: a child
# that writes to its standard output (git, os.system) is logged as a print()
# is, one that reads its standard input reads nothing, and neither ever
# touches a host message. A stray print() goes to stderr too.
_in = os.fdopen(os.dup(0), "r", encoding="utf-8", errors="replace")
_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
sys.stdout = sys.stderr


def _log_to_stderr():
    """A plugin's logging.getLogger(__name__).info(...) reaches the host log
    (through stderr, with print()'s output), as the familiar agent keeps
    plugins' INFO lines in its log; a plugin that configures logging itself
    keeps its own configuration."""
    import logging

    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.INFO)


_log_to_stderr()


def _host_module(dotted):
    """Loads the hostlib module dotted ("tools.interrupt") from its file and
    files it under that name, so the runner and a plugin that imports it
    share one module, whatever else on the path is called tools."""
    parent, _, leaf = dotted.partition(".")
    try:
        pkg = importlib.import_module(parent)
    except ImportError:
        pkg = types.ModuleType(parent)
        pkg.__path__ = [os.path.join(_HOSTLIB, parent)]
        sys.modules[parent] = pkg
    spec = importlib.util.spec_from_file_location(dotted, os.path.join(_HOSTLIB, parent, leaf + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[dotted] = mod
    spec.loader.exec_module(mod)
    setattr(pkg, leaf, mod)
    return mod


_interrupt = _host_module("tools.interrupt")
_session_ctx = _host_module("gateway.session_context")


class _CallEnviron(type(os.environ)):
    """os.environ, except that the HERMES_SESSION_* names read the value the
    current call binds (gateway.session_context): calls of different
    conversations run at once, so a process-wide variable would be another
    call's. Unbound, a name reads the process environment."""

    def __getitem__(self, key):
        value = _session_ctx.bound_value(key) if isinstance(key, str) else None
        if value is None:
            return super().__getitem__(key)
        if value == "":
            raise KeyError(key)
        return value

    def __iter__(self):
        seen = set()
        for key in super().__iter__():
            seen.add(key)
            if isinstance(key, str) and _session_ctx.bound_value(key) == "":
                continue  # unset for this call: dict(os.environ) must not trip on it
            yield key
        for key in _session_ctx.NAMES:
            if key not in seen and _session_ctx.bound_value(key):
                yield key

    def __len__(self):
        return sum(1 for _ in self)


os.environ = _CallEnviron(os.environ._data, os.environ.encodekey, os.environ.decodekey,
                          os.environ.encodevalue, os.environ.decodevalue)


def _call_popen_init(self, *args, **kwargs):
    """subprocess.Popen, with env=None meaning the environment the call sees:
    a child started during a call (subprocess.run, os.popen, asyncio's
    subprocesses) inherits that call's HERMES_SESSION_* names, as it does in
    the familiar agent, not the process's (which has none of them)."""
    if len(args) <= 10 and kwargs.get("env") is None and _call_binds():
        kwargs["env"] = dict(os.environ)
    _popen_init(self, *args, **kwargs)


def _call_binds():
    """Whether the current call binds a conversation's HERMES_SESSION_* names."""
    return _session_ctx.session_context_engaged() and \
        any(_session_ctx.bound_value(k) is not None for k in _session_ctx.NAMES)


_popen_init = subprocess.Popen.__init__
subprocess.Popen.__init__ = _call_popen_init


def _call_system(command):
    """os.system, with the environment the call sees (as subprocess has it)
    during a call that binds a conversation; its wait status as os.system
    returns it."""
    if not _call_binds():
        return _system(command)
    rc = subprocess.call(command, shell=True)
    return (rc & 0xFF) << 8 if rc >= 0 else (-rc & 0x7F)


_system = os.system
os.system = _call_system
_send_lock = threading.Lock()

# What the host tells the runner about its world (set by the host in the
# child's environment): known hook names, the profile, the callback timeout...
_CONTEXT = {}
try:
    _CONTEXT = json.loads(os.environ.get("ATRIUM_PLUGIN_CONTEXT") or "{}")
except ValueError:
    _CONTEXT = {}

_DEFAULT_HOOKS = [
    "on_session_start", "on_session_end", "on_session_finalize", "on_session_reset", "on_session_delete",
    "post_compaction", "pre_llm_call", "post_llm_call", "pre_tool_call", "post_tool_call",
    "transform_tool_result", "transform_llm_output", "pre_api_request", "post_api_request",
    "api_request_error", "pre_command", "subagent_start", "subagent_stop", "pre_gateway_dispatch",
    "pre_compaction", "pre_turn_end", "pre_approval_request", "post_approval_response", "pre_approval_decision",
    "agent_loop_stopped", "transform_terminal_output", "pre_verify",
]
KNOWN_HOOKS = set(_CONTEXT.get("hooks") or _DEFAULT_HOOKS)
SYNC_HOOKS = set(_CONTEXT.get("sync_hooks") or [
    "pre_llm_call", "pre_tool_call", "transform_tool_result", "transform_llm_output", "pre_api_request",
    "post_api_request", "api_request_error", "pre_command", "pre_gateway_dispatch", "pre_compaction", "pre_turn_end",
    "pre_approval_decision", "transform_terminal_output", "pre_verify"])
FOREIGN_HOOKS = set(_CONTEXT.get("foreign_hooks") or [])
# Hooks whose callbacks run under the callback timeout here (a hung callback
# is abandoned and skipped for 60 s); pre_tool_call fails closed.
BOUNDED_HOOKS = {"pre_tool_call", "transform_tool_result", "transform_llm_output", "pre_llm_call",
                 "pre_api_request", "post_api_request", "api_request_error", "pre_gateway_dispatch", "pre_compaction",
                 "pre_turn_end", "pre_approval_decision", "transform_terminal_output", "pre_verify"}
FAIL_CLOSED_HOOKS = {"pre_tool_call"}
TRANSFORM_HOOKS = {"transform_tool_result", "transform_llm_output", "transform_terminal_output"}
MIDDLEWARE_KINDS = {"llm_request", "tool_request", "llm_execution", "tool_execution"}
EXECUTION_MIDDLEWARE = {"llm_execution", "tool_execution"}
SUPPRESS_SECONDS = 60.0
MAX_ABANDONED = 3
# Cancelled calls whose threads still run; past this many the runner exits
# (the host starts it again), which is the only way to end them.
MAX_CANCELLED_RUNNING = 4
CODE_CANCELLED = -32800
TIMEOUT_BLOCK_MESSAGE = "pre_tool_call plugin callback timed out or is still running"
SECTION_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")
SKILL_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
SECTION_MAX_CHARS = 4000
SECTION_POSITIONS = {"after_memory"}


def _send(obj):
    obj["jsonrpc"] = "2.0"
    line = json.dumps(obj, default=_jsonable) + "\n"
    with _send_lock:
        _out.write(line)
        _out.flush()


def _jsonable(v):
    if isinstance(v, (set, frozenset, tuple)):
        return list(v)
    if hasattr(v, "__dict__"):
        return {k: x for k, x in vars(v).items() if not k.startswith("_")}
    return str(v)


def _log(message, level="info"):
    _send({"method": "log", "params": {"level": level, "message": str(message)}})


# ---------------------------------------------------------------------------
# The message pump: a reader thread files host requests in the inbox and
# wakes whoever waits for an answer; the main thread handles the inbox, also
# while it waits (so a callback that asks the host something can be asked
# something in turn).
# ---------------------------------------------------------------------------

_inbox = queue.Queue()
_EOF = object()
_WAKE = object()
_pending = {}
_pending_lock = threading.Lock()
_ids = itertools.count(1)


class HostError(RuntimeError):
    """The host refused or failed a plugin's request."""


class _Future:
    def __init__(self):
        self.event = threading.Event()
        self.result = None
        self.error = None


def _reader():
    for line in _in:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            print("atrium runner: ignoring a malformed line from the host", file=sys.stderr)
            continue
        if not isinstance(msg, dict):
            continue
        if msg.get("method") == "cancel":
            _cancel(msg.get("params") or {})  # here, not in the inbox: the main thread may be busy
            continue
        if msg.get("method") == "configure":
            _configure(msg.get("params") or {})  # here too: the call under way sees it
            continue
        if "method" not in msg and isinstance(msg.get("id"), str):
            with _pending_lock:
                fut = _pending.pop(msg["id"], None)
            if fut is not None:
                fut.result, fut.error = msg.get("result"), msg.get("error")
                fut.event.set()
                _inbox.put(_WAKE)
            continue
        _inbox.put(msg)
    _inbox.put(_EOF)


def _configure(params):
    """The host's plugins.hook_callback_timeout changed while this process
    runs: the bounds derived from it (a host request's budget, the grace
    of a cancelled call) follow from now on."""
    t = params.get("hook_timeout") if isinstance(params, dict) else None
    if isinstance(t, (int, float)) and not isinstance(t, bool) and t == t:
        _CONTEXT["hook_timeout"] = float(t)


def _on_main_thread():
    return threading.current_thread() is threading.main_thread()


def _serve_until(done, deadline):
    """Handles host messages on the main thread until done() or deadline
    (monotonic seconds; None: no bound). Returns done()."""
    while not done():
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            return done()
        try:
            msg = _inbox.get(timeout=timeout)
        except queue.Empty:
            continue
        if msg is _WAKE:
            continue
        if msg is _EOF:
            _inbox.put(_EOF)
            raise HostError("the host closed the connection")
        _handle(msg)
    return True


def _host_call(method, params, timeout=None):
    """Sends a request to the host and returns its result (raises HostError)."""
    rid = "p%d" % next(_ids)
    fut = _Future()
    with _pending_lock:
        _pending[rid] = fut
    _send({"id": rid, "method": method, "params": params})
    limit = timeout if timeout is not None else (_request_budget() or 3600.0)
    deadline = time.monotonic() + limit
    if _on_main_thread():
        _serve_until(fut.event.is_set, deadline)
    else:
        fut.event.wait(max(0.0, deadline - time.monotonic()))
    if not fut.event.is_set():
        with _pending_lock:
            _pending.pop(rid, None)
        raise HostError("the host did not answer %s within %.0f s" % (method, limit))
    if fut.error:
        raise HostError(fut.error.get("message") or str(fut.error))
    return fut.result


def _callback_timeout():
    t = _CONTEXT.get("hook_timeout")
    return float(t) if isinstance(t, (int, float)) else 30.0


def _request_budget():
    """How long a request may take here before the host gives up on it
    (None: the callback timeout is off)."""
    t = _callback_timeout()
    if t <= 0:
        return None
    return max(0.5, t * 0.8 - 0.25)


# ---------------------------------------------------------------------------
# Calling plugin code
# ---------------------------------------------------------------------------

_loops = threading.local()


def _await(awaitable):
    import asyncio  # only plugins with async callbacks pay for it
    loop = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = asyncio.new_event_loop()
        _loops.loop = loop
    return loop.run_until_complete(awaitable)


def _close_thread_loop():
    """Closes the event loop a worker thread made for async callbacks, at
    the end of its call (what they spawned and left pending is cancelled)."""
    loop = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        return
    try:
        import asyncio
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    except Exception:  # noqa: BLE001 - closing is best effort
        pass
    finally:
        loop.close()


def _narrow(fn, kwargs):
    """The keyword arguments fn declares (all of them with **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return dict(kwargs)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return dict(kwargs)
    return {p.name: kwargs[p.name] for p in params
            if p.name in kwargs and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _call(fn, kwargs, positional=()):
    """Calls fn with the positional arguments and the keyword arguments its
    signature declares; awaits a coroutine."""
    use = _narrow(fn, kwargs)
    if positional:
        try:
            names = [p.name for p in inspect.signature(fn).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
        for n in names[:len(positional)]:
            use.pop(n, None)
    result = fn(*positional, **use)
    if inspect.isawaitable(result):
        result = _await(result)
    return result


def _fn_name(fn):
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


_reported = set()


def _report(hook, fn, exc, kwargs, tb=None, surface="hook"):
    """A warning (with the traceback and the fields the hook provides) the
    first time a (hook, callback, error) is seen; repeats at debug."""
    key = (hook, getattr(fn, "__module__", ""), _fn_name(fn), type(exc).__name__, str(exc)[:200])
    if key in _reported:
        _log("%s %s callback %s raised again: %s" % (surface, hook, _fn_name(fn), exc), "debug")
        return
    _reported.add(key)
    print("%s%s %r callback %s raised %s: %s (the %s provides: %s; identical failures are logged at debug from now on)"
          % ((tb or "") + ("\n" if tb else ""), surface, hook, _fn_name(fn), type(exc).__name__, exc, surface,
             ", ".join(sorted(kwargs)) or "no fields"), file=sys.stderr)


_suppressed = {}   # (hook, id(fn)) -> monotonic time until which it is skipped
_running = set()   # (hook, id(fn), call identity) with a worker still running
_abandoned = {}    # (hook, id(fn)) -> number of abandoned workers
_gate = threading.Lock()
_SKIPPED = object()


def _call_identity(kwargs):
    for f in ("tool_call_id", "turn_id"):
        v = kwargs.get(f)
        if isinstance(v, str) and v:
            return v
    return None


def _run_bounded(hook, fn, kwargs, deadline):
    """Runs one callback on a worker thread, bounded by deadline; _SKIPPED
    when it is suppressed after a timeout, still running for this call, or
    timed out now (the worker is abandoned, never joined)."""
    skey = (hook, id(fn))
    gkey = skey + (_call_identity(kwargs),)
    with _gate:
        until = _suppressed.get(skey)
        if gkey in _running or (until is not None and until > time.monotonic()) or _abandoned.get(skey, 0) >= MAX_ABANDONED:
            print("atrium runner: %s callback %s skipped: it timed out recently or is still running"
                  % (hook, _fn_name(fn)), file=sys.stderr)
            return _SKIPPED
        _suppressed.pop(skey, None)
        _running.add(gkey)
    box = {}
    done = threading.Event()

    def work():
        try:
            box["value"] = _call(fn, kwargs)
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            box["exc"], box["tb"] = exc, traceback.format_exc()
        finally:
            _close_thread_loop()
            with _gate:
                if gkey in _running:
                    _running.discard(gkey)
                    if box.get("abandoned"):
                        _abandoned[skey] = max(0, _abandoned.get(skey, 1) - 1)
            done.set()
            _inbox.put(_WAKE)

    # In a copy of this context: the callback sees the call's conversation.
    threading.Thread(target=contextvars.copy_context().run, args=(work,), name="atrium-hook-" + hook,
                     daemon=True).start()
    if _on_main_thread():
        _serve_until(done.is_set, deadline)
    else:
        done.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    if not done.is_set():
        with _gate:
            box["abandoned"] = True
            _suppressed[skey] = time.monotonic() + SUPPRESS_SECONDS
            _abandoned[skey] = _abandoned.get(skey, 0) + 1
        print("atrium runner: %s callback %s timed out; skipped for %.0f s" % (hook, _fn_name(fn), SUPPRESS_SECONDS),
              file=sys.stderr)
        return _SKIPPED
    if "exc" in box:
        raise _Raised(box["exc"], box["tb"])
    return box.get("value")


class _Raised(Exception):
    def __init__(self, exc, tb):
        super().__init__(str(exc))
        self.exc, self.tb = exc, tb


# Atrium's local surfaces: HERMES_SESSION_SOURCE names them, as the familiar
# agent's CLI and desktop do (a chat platform is HERMES_SESSION_PLATFORM).
_LOCAL_SURFACES = {"cli", "desktop", "dashboard", "cron"}


def _bound(fields):
    """What a call's fields (a request's params, a hook's payload) tell of
    its conversation, as _session_env's keywords: the session, the platform,
    and on a chat platform the sender and the chat."""
    platform = fields.get("platform") or ""
    out = {"session_id": fields.get("session_id"), "platform": platform,
           "source": platform if platform in _LOCAL_SURFACES else "",
           "cron_session": "1" if platform == "cron" else ""}
    src = fields.get("source")
    if isinstance(src, dict):
        out.update({k: src.get(k) for k in ("user_id", "chat_id", "thread_id", "chat_type", "user_name")})
    return out


@contextlib.contextmanager
def _session_env(session_key, **more):
    """Binds the conversation a call belongs to (HERMES_SESSION_KEY, and
    what else is known: session_id, platform, chat_id, user_id, ...) for
    this call alone, in gateway.session_context, which os.environ reads."""
    if not session_key:
        yield
        return
    values = {k: v for k, v in more.items() if v}
    values["session_key"] = session_key
    tokens = _session_ctx.set_session_vars(**values)
    try:
        yield
    finally:
        for token in reversed(tokens):
            token.var.reset(token)


# ---------------------------------------------------------------------------
# What register(ctx) receives
# ---------------------------------------------------------------------------


class PluginToolOverrideError(PermissionError):
    """A plugin asked to override a built-in tool without
    plugins.entries.<id>.allow_tool_override."""


class PluginLlmTrustError(PermissionError):
    """A plugin asked ctx.llm for an override it is not trusted with."""


class _Usage(types.SimpleNamespace):
    pass


class PluginLlmCompleteResult(types.SimpleNamespace):
    """ctx.llm.complete's answer: text, provider, model, agent_id, usage."""


class PluginLlm:
    """ctx.llm: completions on the profile's configured model, through the
    host (the plugin never sees credentials)."""

    def __init__(self, ctx):
        self._ctx = ctx

    def _gate(self, provider, model, agent_id, profile):
        gate = (self._ctx._context.get("llm_gate") or {})
        for what, value, key in (("provider", provider, "allow_provider_override"),
                                 ("model", model, "allow_model_override"),
                                 ("agent id", agent_id, "allow_agent_id_override"),
                                 ("auth profile", profile, "allow_profile_override")):
            if value and not gate.get(key):
                raise PluginLlmTrustError("Plugin %r cannot override the %s (set plugins.entries.%s.llm.%s to true to allow)."
                                          % (self._ctx.plugin_id, what, self._ctx.plugin_id, key))

    def complete(self, messages, *, provider=None, model=None, agent_id=None, profile=None, max_tokens=None,
                 temperature=None, timeout=None, purpose=None, **_ignored):
        self._gate(provider, model, agent_id, profile)
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages must be a non-empty list of {role, content}")
        res = _host_call("llm.complete", {"messages": messages, "model": model, "max_tokens": max_tokens,
                                          "temperature": temperature, "purpose": purpose}, timeout=timeout)
        usage = _Usage(**{k: v for k, v in (res.get("usage") or {}).items()})
        return PluginLlmCompleteResult(text=res.get("text", ""), provider=res.get("provider", ""),
                                       model=res.get("model", ""), agent_id=res.get("agent_id", ""),
                                       usage=usage, audit=res.get("audit") or {})

    async def acomplete(self, messages, **kw):
        return self.complete(messages, **kw)

    def complete_structured(self, *, instructions="", input=None, json_schema=None, json_mode=False,
                            schema_name=None, system_prompt=None, **kw):
        msgs = []
        system = [system_prompt] if system_prompt else []
        if json_mode or json_schema is not None:
            system.append("Respond with a single JSON object that matches the requested shape. Do not include prose.")
        if system:
            msgs.append({"role": "system", "content": "\n\n".join(system)})
        text = instructions
        if schema_name:
            text += "\n\nSchema name: " + schema_name
        if json_schema is not None:
            text += "\n\nJSON schema:\n" + json.dumps(json_schema, sort_keys=True)
        for block in input or []:
            if isinstance(block, dict) and block.get("type") == "text":
                text += "\n\n" + str(block.get("text", ""))
            elif isinstance(block, str):
                text += "\n\n" + block
        msgs.append({"role": "user", "content": text})
        res = self.complete(msgs, **kw)
        parsed, kind = None, "text"
        if json_mode or json_schema is not None:
            try:
                parsed, kind = json.loads(res.text), "json"
            except ValueError:
                pass
        return PluginLlmCompleteResult(text=res.text, provider=res.provider, model=res.model, agent_id=res.agent_id,
                                       usage=res.usage, parsed=parsed, content_type=kind, audit=res.audit)

    async def acomplete_structured(self, **kw):
        return self.complete_structured(**kw)


class PluginState:
    """ctx.state: small JSON key/value state in the plugin's own folder."""

    _KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
    quota_bytes = 10 * 1024 * 1024

    def __init__(self, folder):
        self.data_dir = folder
        self.path = os.path.join(folder, "state.json")
        self._lock = threading.RLock()

    def _check(self, key):
        if not isinstance(key, str) or not self._KEY.match(key) or ".." in key:
            raise ValueError("Plugin state keys must be 1-128 characters using letters, numbers, '_', '-', '.', or ':'")

    def _read(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        if not isinstance(data, dict):
            raise RuntimeError("plugin state %s: the root must be an object" % self.path)
        return data

    def get(self, key, default=None):
        self._check(key)
        with self._lock:
            return self._read().get(key, default)

    def set(self, key, value):
        self._check(key)
        with self._lock:
            data = self._read()
            data[key] = value
            self._write(data)

    def delete(self, key):
        self._check(key)
        with self._lock:
            data = self._read()
            if data.pop(key, None) is not None:
                self._write(data)

    def keys(self):
        with self._lock:
            return sorted(self._read())

    def _write(self, data):
        encoded = json.dumps(data, ensure_ascii=False, indent=2)
        if len(encoded.encode("utf-8")) > self.quota_bytes:
            raise ValueError("plugin state quota exceeded (%d bytes)" % self.quota_bytes)
        os.makedirs(self.data_dir, exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(encoded)
        os.replace(tmp, self.path)


class _Registration(types.SimpleNamespace):
    """What a ctx.register_* call returns (a handle the plugin may keep)."""

    def dispose(self):
        return None


_INERT_REGISTRARS = {
    "register_context_reference": "Atrium has no @-references, so it is never called",
    "register_platform": "Atrium's gateway platforms are built in (Telegram, Slack, Discord, a signed webhook) and take no plugin handlers, so it is never started",
    "register_platform_handler": "Atrium's gateway platforms are built in (Telegram, Slack, Discord, a signed webhook) and take no plugin handlers, so it is never called",
    "register_telegram_handler": "Atrium's gateway platforms are built in (Telegram, Slack, Discord, a signed webhook) and take no plugin handlers, so it is never called",
    "register_slack_action_handler": "Atrium's gateway platforms are built in (Telegram, Slack, Discord, a signed webhook) and take no plugin handlers, so it is never called",
    "register_image_gen_provider": "Atrium has no image generation, so it is never called",
    "register_video_gen_provider": "Atrium has no video generation, so it is never called",
    "register_web_search_provider": "Atrium's web tools use their own providers (web.backend: firecrawl, tavily), so it is never called",
    "register_browser_provider": "Atrium has no browser tool, so it is never called",
    "register_terminal_environment_provider": "Atrium's terminal runs on this machine only (terminal.backend: local), so it is never called",
    "register_tts_provider": "Atrium's text to speech uses its own providers (tts.provider: openai, elevenlabs, or a command under tts.providers), so it is never called",
    "register_transcription_provider": "Atrium's transcription uses its own providers (stt.provider, or a command under stt.providers), so it is never called",
    "register_secret_source": "Atrium reads secrets from the environment only, so it is never called",
    "register_redaction_patterns": "Atrium has no redaction pass, so they are never applied",
    "register_approval_transport": "Atrium has no approval transports, so it is never called",
    "register_dashboard_auth_provider": "Atrium's dashboard uses its own token, so it is never called",
    "register_auxiliary_task": "Atrium has no auxiliary model tasks, so it is never used",
    "register_provider": "Atrium's model providers are built in, so it is never used",
    "register_model_provider": "Atrium's model providers are built in, so it is never used",
}


class PluginContext:
    """What register(ctx) receives: the familiar registration API."""

    def __init__(self, name="", settings=None, work_dir="", context=None):
        self._context = context or {}
        self.name = name
        self.plugin_id = self._context.get("plugin_id") or name
        self.settings = settings if settings is not None else {}
        self.work_dir = work_dir
        manifest = self._context.get("manifest") or {}
        self.manifest = types.SimpleNamespace(name=manifest.get("name", name), version=manifest.get("version", ""),
                                              description=manifest.get("description", ""),
                                              kind=manifest.get("kind", "standalone"),
                                              source=manifest.get("source", ""), key=self.plugin_id,
                                              path=manifest.get("path", ""), requires_env=manifest.get("requires_env", []))
        self.hooks = {}          # name -> [callbacks], hooks Atrium fires
        self.other_hooks = {}    # name -> [callbacks], hooks Atrium has no moment for (inert) or unknown
        self.commands = {}       # name -> (handler, description, args_hint)
        self.tools = {}          # name -> dict
        self.cli_commands = {}   # name -> dict
        self.middleware = {}     # kind -> [callbacks]
        self.sections = {}       # id -> dict
        self.memory_providers = {}
        self.context_engines = {}
        self.subscriptions = {}  # event -> [callbacks]
        self.skills = {}         # name -> {"path", "description"}
        self.inert = []          # {"kind", "name", "reason"}
        self.warnings = []
        self.unload_callbacks = []
        self.loaded = False  # True once the host has its registrations
        self._llm = None
        self._state = None

    # -- facades -----------------------------------------------------------

    @property
    def profile_name(self):
        return self._context.get("profile") or os.environ.get("ATRIUM_PROFILE") or "default"

    @property
    def hermes_home(self):
        return self._context.get("hermes_home") or os.environ.get("HERMES_HOME", "")

    @property
    def llm(self):
        if self._llm is None:
            self._llm = PluginLlm(self)
        return self._llm

    @property
    def state(self):
        if self._state is None:
            self._state = PluginState(self.work_dir or os.getcwd())
        return self._state

    def has_plugin(self, plugin_id):
        try:
            return bool(_host_call("has_plugin", {"id": plugin_id}, timeout=10))
        except HostError:
            return plugin_id in (self._context.get("enabled_plugins") or [])

    def on_unload(self, callback):
        if not callable(callback):
            raise TypeError("on_unload callback must be callable")
        self.unload_callbacks.append(callback)
        return _Registration(kind="on_unload", key=_fn_name(callback))

    def log(self, message, level="info"):
        _log(message, level)

    # -- settings ------------------------------------------------------------

    @staticmethod
    def _segments(key):
        if not isinstance(key, str) or not key or "/" in key or "\\" in key:
            raise ValueError("Expected a plugin-relative config key such as 'endpoint' or 'retry.policy'")
        parts = key.split(".")
        if parts[0].lower() in ("model", "plugins", "security", "settings") or not all(
                re.match(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$", p) for p in parts):
            raise ValueError("Expected a plugin-relative config key such as 'endpoint' or 'retry.policy'")
        return parts

    def get_config(self, key=None, default=None):
        """plugins.entries.<id>.settings (all of it without a key, else the
        value at a dotted key)."""
        if key is None:
            return copy.deepcopy(self.settings)
        cur = self.settings
        for seg in self._segments(key):
            if not isinstance(cur, dict) or seg not in cur:
                return default
            cur = cur[seg]
        return copy.deepcopy(cur)

    def set_config(self, key, value=None):
        """Writes one value of plugins.entries.<id>.settings in config.yaml
        (a mapping sets several)."""
        items = key.items() if isinstance(key, dict) else [(key, value)]
        for k, v in items:
            parts = self._segments(k)
            _host_call("set_config", {"key": ".".join(parts), "value": v}, timeout=30)
            cur = self.settings
            for seg in parts[:-1]:
                nxt = cur.get(seg)
                if not isinstance(nxt, dict):
                    nxt = {}
                    cur[seg] = nxt
                cur = nxt
            cur[parts[-1]] = v

    # -- registration ----------------------------------------------------------

    def _inert(self, kind, name, reason):
        self.inert.append({"kind": kind, "name": str(name), "reason": reason})
        print("atrium runner: %s %s registered; %s" % (kind, name, reason), file=sys.stderr)
        return _Registration(kind=kind, key=str(name), inert=True)

    def register_hook(self, name, fn=None):
        if fn is None:  # decorator form
            def deco(f):
                self.register_hook(name, f)
                return f
            return deco
        if name in KNOWN_HOOKS:
            self.hooks.setdefault(name, []).append(fn)
        else:
            self.other_hooks.setdefault(name, []).append(fn)
            if name in FOREIGN_HOOKS:
                self._inert("hook", name, "Atrium has no such moment, so it is never called")
            else:
                self.warnings.append("registered unknown hook %r (kept, never called; Atrium knows %s)"
                                     % (name, ", ".join(sorted(KNOWN_HOOKS))))
        return fn

    def register_command(self, name, handler=None, description="", args_hint="", argument_mode=None, **_ignored):
        if handler is None:
            def deco(f):
                self.register_command(name, f, description, args_hint, argument_mode)
                return f
            return deco
        clean = str(name).lower().strip().lstrip("/").replace(" ", "-")
        if not clean:
            self.warnings.append("tried to register a command with an empty name")
            return None
        self.commands[clean] = (handler, description or "Plugin command", (args_hint or "").strip())
        return handler

    def register_tool(self, name, toolset="", schema=None, handler=None, check_fn=None, requires_env=None,
                      is_async=False, description="", emoji="", override=False, **_ignored):
        if handler is None or not callable(handler):
            raise TypeError("register_tool %r needs a callable handler" % name)
        schema = dict(schema or {})
        if schema.get("type") == "function" and isinstance(schema.get("function"), dict):
            schema = dict(schema["function"])
        builtin = set(self._context.get("builtin_tools") or [])
        if name in builtin:
            if not override:
                self.warnings.append("tried to shadow the built-in tool %r without override=True (not registered)" % name)
                return None
            if not (self._context.get("allow_tool_override") or self.manifest.source == "bundled"):
                raise PluginToolOverrideError(
                    "Plugin %r cannot override built-in tool %r. Set plugins.entries.%s.allow_tool_override: true in "
                    "config.yaml to allow this plugin to replace built-in tools." % (self.plugin_id, name, self.plugin_id))
        if name in self.tools and not override:
            self.warnings.append("registered tool %r twice; the second registration replaces the first" % name)
        envs = [e if isinstance(e, str) else (e or {}).get("name", "") for e in (requires_env or [])]
        self.tools[name] = {"handler": handler, "check_fn": check_fn, "requires_env": [e for e in envs if e],
                            "is_async": bool(is_async), "toolset": toolset or self.plugin_id,
                            "schema": schema, "description": description or schema.get("description", ""),
                            "emoji": emoji, "override": bool(override)}
        return _Registration(kind="tool", key=name)

    def register_middleware(self, kind, fn):
        if kind in MIDDLEWARE_KINDS:
            self.middleware.setdefault(kind, []).append(fn)
        else:
            self.warnings.append("registered unknown middleware %r (kept, never called)" % kind)
        return _Registration(kind="middleware", key=kind)

    def register_cli_command(self, name, help="", setup_fn=None, handler_fn=None, description="", **_ignored):
        if setup_fn is None or not callable(setup_fn):
            raise TypeError("register_cli_command %r needs a setup_fn(parser)" % name)
        self.cli_commands[str(name)] = {"help": help or "", "setup_fn": setup_fn, "handler_fn": handler_fn,
                                        "description": description or ""}
        return _Registration(kind="cli_command", key=name)

    def register_memory_provider(self, provider):
        try:
            from agent.memory_provider import MemoryProvider
        except ImportError:  # pragma: no cover - the hostlib ships it
            MemoryProvider = object
        if not isinstance(provider, MemoryProvider):
            self.warnings.append("tried to register a memory provider that does not inherit from MemoryProvider (ignored)")
            return None
        name = str(getattr(provider, "name", "") or "").strip() or self.plugin_id
        self.memory_providers[name] = _ProviderHost(provider, self)
        return None

    def register_context_engine(self, engine):
        try:
            from agent.context_engine import ContextEngine
        except ImportError:  # pragma: no cover
            ContextEngine = object
        if self.context_engines:
            self.warnings.append("tried to register a second context engine; only one is allowed (ignored)")
            return None
        if not isinstance(engine, ContextEngine):
            if not _DuckEngine.fits(engine):
                self.warnings.append("tried to register a context engine that does not inherit from ContextEngine (ignored)")
                return None
            engine = _DuckEngine(engine)
        name = str(getattr(engine, "name", "") or "").strip() or self.plugin_id
        self.context_engines[name] = _EngineHost(engine, self)
        return _Registration(kind="context_engine", key=name)

    def register_skill(self, name, path, description=""):
        """A skill the plugin ships: its SKILL.md (or the folder holding it),
        which the model loads with skill_view(name="<plugin>:<name>")."""
        if not isinstance(name, str) or not SKILL_NAME_RE.match(name):
            raise ValueError("skill name must be 1-64 characters: letters, digits, '.', '_' or '-'")
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError("skill path must be a path to its SKILL.md or its folder")
        full = os.path.abspath(os.path.join(_plugin_dir or ".", os.fspath(path)))
        if os.path.isdir(full):
            full = os.path.join(full, "SKILL.md")
        if name in self.skills:
            raise ValueError("skill %r is already registered by plugin %r" % (name, self.plugin_id))
        self.skills[name] = {"path": full, "description": str(description or "")[:1024]}
        return _Registration(kind="skill", key=name)

    def register_system_prompt_section(self, id, content, *, position="after_memory", max_chars=SECTION_MAX_CHARS):
        if not isinstance(id, str) or not SECTION_ID_RE.match(id):
            raise ValueError("system prompt section id must be 1-128 lowercase characters using letters, numbers, '.', '_', or '-'")
        if not isinstance(content, str) and not callable(content):
            raise TypeError("system prompt section content must be a string or callable")
        if position not in SECTION_POSITIONS:
            raise ValueError("system prompt section position must be one of: " + ", ".join(sorted(SECTION_POSITIONS)))
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 0 < max_chars <= SECTION_MAX_CHARS:
            raise ValueError("system prompt section max_chars must be between 1 and %d" % SECTION_MAX_CHARS)
        if id in self.sections:
            raise ValueError("system prompt section %r is already registered by plugin %r" % (id, self.plugin_id))
        self.sections[id] = {"content": content, "position": position, "max_chars": max_chars}
        return _Registration(kind="system_prompt_section", key=id)

    def emit(self, event, payload=None):
        if not event or not isinstance(event, str):
            raise ValueError("Plugin %r emit() requires a non-empty event name" % self.plugin_id)
        if ":" in event:
            raise ValueError("Plugin %r may not emit %r: emit only the bare event name; the namespace is forced to %r"
                             % (self.plugin_id, event, self.plugin_id + ":"))
        if payload is not None and not isinstance(payload, dict):
            raise TypeError("Plugin %r emit() payload must be a dict or None" % self.plugin_id)
        res = _host_call("emit", {"event": "%s:%s" % (self.plugin_id, event), "payload": payload or {}}, timeout=10)
        return int(res or 0)

    def subscribe(self, event, callback):
        if not event or not isinstance(event, str):
            raise ValueError("Plugin %r subscribe() requires a non-empty event name" % self.plugin_id)
        if not callable(callback):
            raise TypeError("Event subscriber callback must be callable")
        self.subscriptions.setdefault(event, []).append(callback)

    def inject_message(self, content, role="user", *, session_key=None):
        res = _host_call("inject_message", {"content": str(content), "role": role or "user",
                                            "session_key": session_key or os.environ.get("HERMES_SESSION_KEY")}, timeout=30)
        return bool(res)

    def dispatch_tool(self, tool_name, args=None, **kwargs):
        res = _host_call("dispatch_tool", {"name": tool_name, "args": args or {},
                                           "session_key": os.environ.get("HERMES_SESSION_KEY")})
        return res if isinstance(res, str) else json.dumps(res)

    def spawn_task(self, coro, *, name=None):
        import asyncio
        if not asyncio.iscoroutine(coro):
            raise TypeError("spawn_task expects a coroutine")
        return asyncio.get_running_loop().create_task(coro, name=name)

    def has_capability(self, capability):
        return capability in (self._context.get("granted_capabilities") or [])

    def __getattr__(self, attr):
        # Any registrar of the familiar API Atrium has no moment for is
        # accepted, recorded and reported as inert; the plugin goes on.
        if attr.startswith("register_"):
            reason = _INERT_REGISTRARS.get(attr, "Atrium has no such capability, so it is never used")

            def inert(*args, **kwargs):
                label = args[0] if args and isinstance(args[0], str) else getattr(args[0], "name", "") if args else ""
                if attr == "register_redaction_patterns":
                    self._inert(attr[len("register_"):], label or "patterns", reason)
                    return 0
                return self._inert(attr[len("register_"):], label or kwargs.get("name", "") or "-", reason)
            return inert
        raise AttributeError(attr)


_MISSING = object()


class _DuckEngine:
    """A context engine that does not inherit from ContextEngine, which the
    familiar API's agent takes as it is: any object with callable
    should_compress, compress and update_from_response and a name (an
    attribute or a property). The runner drives it through this wrapper as
    it drives a subclass: the object's own methods and attributes first, and
    for the optional ones it lacks the base class's defaults, which keep
    their state on the object itself (update_model sets its
    context_length)."""

    REQUIRED = ("should_compress", "compress", "update_from_response")

    @classmethod
    def fits(cls, engine):
        try:
            name = getattr(engine, "name", None)
        except Exception:  # noqa: BLE001 - a name property that raises is no name
            return False
        return isinstance(name, str) and all(callable(getattr(engine, m, None)) for m in cls.REQUIRED)

    def __init__(self, engine):
        object.__setattr__(self, "_engine", engine)

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        engine = object.__getattribute__(self, "_engine")
        value = getattr(engine, attr, _MISSING)
        if value is not _MISSING:
            return value
        from agent.context_engine import ContextEngine

        default = getattr(ContextEngine, attr, _MISSING)
        if default is _MISSING:
            raise AttributeError("%r object has no attribute %r" % (type(engine).__name__, attr))
        return types.MethodType(default, self) if inspect.isfunction(default) else default

    def __setattr__(self, attr, value):
        setattr(self._engine, attr, value)

    def __deepcopy__(self, memo):
        return _DuckEngine(copy.deepcopy(self._engine, memo))


class _ProviderHost:
    """Drives one memory provider: initialize once per process, before any
    other call."""

    def __init__(self, provider, ctx):
        self.provider = provider
        self.ctx = ctx
        self.ready = False
        self.identity = None
        self.available = None
        self.reason = ""

    def ensure(self, session_id, platform, user_id=None, agent_context=None, parent_session_id=None):
        # initialize once per process, and again when the agent it serves
        # changes (a cron run, another gateway sender, a subagent of another
        # parent): the provider learns agent_context, user_id and a
        # subagent's parent_session_id as the familiar API gives them.
        identity = (agent_context or "primary", user_id or None, parent_session_id or None)
        if self.ready and identity == self.identity:
            return True
        if self.available is None:
            try:
                self.available = bool(self.provider.is_available())
            except Exception as exc:  # noqa: BLE001
                self.available, self.reason = False, "is_available raised %s: %s" % (type(exc).__name__, exc)
            if not self.available and not self.reason:
                try:
                    self.reason = self.provider.unavailable_reason() or "is_available() returned False"
                except Exception:  # noqa: BLE001
                    self.reason = "is_available() returned False"
        if not self.available:
            return False
        kwargs = {"hermes_home": self.ctx.hermes_home, "platform": platform or "cli",
                  "agent_context": identity[0], "agent_identity": self.ctx.profile_name}
        if identity[1]:
            kwargs["user_id"] = identity[1]
        if identity[2]:
            kwargs["parent_session_id"] = identity[2]
        _call(self.provider.initialize, kwargs, positional=(session_id or "",))
        self.ready, self.identity = True, identity
        return True


class _EngineHost:
    """Drives one context engine as the familiar API's agent does: each
    session gets its own copy of the registered engine (copy.deepcopy, so one
    conversation's budgets and state never leak into another's), given the
    model (update_model) and started (on_session_start) before its first
    call. A compaction hands the copy on to the session that continues the
    conversation (on_session_start with boundary_reason="compression");
    on_session_end ends and drops it. An engine that cannot be copied is
    shared, with a warning."""

    MAX_SESSIONS = 64

    def __init__(self, engine, ctx):
        self.engine = engine
        self.ctx = ctx
        # session id -> [its engine copy, the (model, context_length) it
        # was given], least recently used first
        self.sessions = {}
        self.shared = False

    def _copy(self):
        if not self.shared:
            try:
                return copy.deepcopy(self.engine)
            except Exception as exc:  # noqa: BLE001
                self.shared = True
                _log("context engine %s could not be safely copied (%s: %s); one engine serves every session"
                     % (getattr(self.engine, "name", "?"), type(exc).__name__, exc), "warning")
        return self.engine

    def _guard(self, what, fn, *args, **kwargs):
        try:
            _call(fn, kwargs, positional=args)
        except Exception as exc:  # noqa: BLE001
            _report("context_engine." + what, fn, exc, kwargs, traceback.format_exc(), surface="context engine")

    def _model(self, entry, params):
        model, length = params.get("model") or "", int(params.get("context_length") or 0)
        if (not model and not length) or entry[1] == (model, length):
            return
        entry[1] = (model, length)
        self._guard("update_model", entry[0].update_model, model=model, context_length=length,
                    provider=params.get("provider") or "")

    def _start(self, sid, eng, params, **extra):
        kwargs = {"platform": params.get("platform") or "cli", "conversation_id": params.get("session_key") or None}
        if not extra:
            kwargs.update(hermes_home=self.ctx.hermes_home, model=params.get("model") or "",
                          context_length=getattr(eng, "context_length", 0))
        kwargs.update(extra)
        self._guard("on_session_start", eng.on_session_start, sid, **kwargs)

    def ensure(self, params):
        """The session's copy, started; None when the call has no session."""
        sid = params.get("session_id") or ""
        if not sid:
            return None
        entry = self.sessions.pop(sid, None)
        fresh = entry is None
        if fresh:
            entry = [self._copy(), None]
        self.sessions[sid] = entry  # the most recently used last
        self._model(entry, params)
        if fresh:
            self._start(sid, entry[0], params)
        while len(self.sessions) > self.MAX_SESSIONS:
            del self.sessions[next(iter(self.sessions))]
        return entry[0]

    def boundary(self, params):
        """A compaction rewrote the conversation: the copy of the session it
        continued serves the new one, and hears so."""
        sid, old = params.get("session_id") or "", params.get("old_session_id") or ""
        if old and old != sid and old in self.sessions:
            self.sessions[sid] = self.sessions.pop(old)
        eng = self.ensure(params)
        if eng is not None:
            self._start(sid, eng, params, boundary_reason="compression", old_session_id=old or sid)

    def end(self, params, args, kwargs):
        entry = self.sessions.pop(params.get("session_id") or "", None)
        if entry is None:
            return None  # nothing was started for it here
        return _call(entry[0].on_session_end, kwargs, positional=tuple(args))


# ---------------------------------------------------------------------------
# Handlers of the host's requests
# ---------------------------------------------------------------------------

_ctx = None
_plugin_dir = ""


class _RPCError(Exception):
    def __init__(self, code, message, tb=None):
        super().__init__(message)
        self.code, self.tb = code, tb


def _load(plugin_dir):
    path = os.path.join(plugin_dir, "__init__.py")
    # A plugin may import its own subpackages by their absolute names (from
    # mypkg.engine import ...), as it can where it is pip-installed: its
    # folder is searched after everything else, so it shadows nothing.
    folder = os.path.abspath(plugin_dir)
    if folder not in sys.path:
        sys.path.append(folder)
    # hermes_cli.config and agent.context_compressor ask the host.
    try:
        import atrium_host
        atrium_host.call = _host_call
    except ImportError:  # pragma: no cover - hostlib ships it
        pass
    base = "".join(c if c.isalnum() else "_" for c in os.path.basename(os.path.abspath(plugin_dir)))
    name = "atrium_plugin_" + base
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=[plugin_dir])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # Plugins of the familiar API are loaded as hermes_plugins.<name> there.
    ns = sys.modules.setdefault("hermes_plugins", types.ModuleType("hermes_plugins"))
    if not hasattr(ns, "__path__"):
        ns.__path__ = []
    sys.modules["hermes_plugins." + base] = module
    spec.loader.exec_module(module)
    return module


def _load_gateway_hook(hook_dir, info):
    """A gateway event hook of the familiar agent (HOOK.yaml + handler.py):
    handler.py is imported, and its handle(event_type, context), plain or
    async, is called for each event the host delivers under the names
    HOOK.yaml lists (a wildcard such as command:* is matched by the host)."""
    path = os.path.join(hook_dir, "handler.py")
    base = "".join(c if c.isalnum() else "_" for c in os.path.basename(os.path.abspath(hook_dir)))
    spec = importlib.util.spec_from_file_location("hermes_hook_" + base, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    handle = getattr(module, "handle", None)
    if not callable(handle):
        raise TypeError("%s has no handle(event_type, context) function" % path)

    def deliver(event_type=None, context=None):
        return _call(handle, {}, positional=(event_type, dict(context or {})))

    deliver.__qualname__ = getattr(handle, "__qualname__", "handle")
    for event in info.get("events") or []:
        if isinstance(event, str) and event:
            _ctx.subscribe(event, deliver)


def _host_class(cls):
    """Whether cls is one of the hostlib's own classes (a base class, the
    built-in compressor), which a plugin never is."""
    mod = sys.modules.get(getattr(cls, "__module__", "") or "")
    f = os.path.abspath(getattr(mod, "__file__", None) or "")
    return f.startswith(_HOSTLIB + os.sep)


def _register_by_class(module):
    """A plugin without register(ctx), taken as the familiar API's memory
    and context-engine loaders take one: the first top-level subclass of
    MemoryProvider in the module (those it defines before those it imports,
    each in name order; an abstract one, or one that cannot be made without
    arguments, is passed over) is made and registered as its memory provider, and likewise
    a subclass of ContextEngine as its context engine. Raises when neither
    exists."""
    from agent.context_engine import ContextEngine
    from agent.memory_provider import MemoryProvider

    own = module.__name__
    found, failed = False, []
    for base, register in ((MemoryProvider, _ctx.register_memory_provider),
                           (ContextEngine, _ctx.register_context_engine)):
        classes = [v for v in (getattr(module, a, None) for a in dir(module))
                   if isinstance(v, type) and issubclass(v, base) and not inspect.isabstract(v) and not _host_class(v)]
        classes.sort(key=lambda c: not (c.__module__ == own or c.__module__.startswith(own + ".")))
        for cls in classes:
            try:
                instance = cls()
            except Exception as exc:  # noqa: BLE001 - the next candidate may do
                failed.append("%s() raised %s: %s" % (cls.__name__, type(exc).__name__, exc))
                continue
            register(instance)
            found = True
            break
    if not found:
        why = "; ".join(failed) if failed else "it defines no MemoryProvider or ContextEngine subclass either"
        raise RuntimeError("%s/__init__.py has no register(ctx), and %s" % (_plugin_dir, why))
    _ctx.warnings.extend("has no register(ctx); passed over " + f for f in failed)


def _initialize(params):
    global _ctx
    work_dir = params.get("work_dir") or os.environ.get("ATRIUM_PLUGIN_WORKDIR", "")
    if work_dir:
        os.environ.setdefault("ATRIUM_PLUGIN_WORKDIR", work_dir)
    _ctx = PluginContext(params.get("name", ""), params.get("settings"), work_dir, _CONTEXT)
    try:
        import atrium_host
        atrium_host.plugin = _ctx  # plugins.plugin_storage and tools.registry find the plugin
    except ImportError:  # pragma: no cover - hostlib ships it
        pass
    gateway_hook = _CONTEXT.get("gateway_hook")
    if isinstance(gateway_hook, dict):
        _load_gateway_hook(_plugin_dir, gateway_hook)
    else:
        module = _load(_plugin_dir)
        reg = getattr(module, "register", None)
        if reg is None:
            _register_by_class(module)
        else:
            reg(_ctx)
    _ctx.loaded = True
    for w in _ctx.warnings:
        print("atrium runner: warning: " + w, file=sys.stderr)
    c = _ctx
    return {
        "protocol_version": PROTOCOL_VERSION,
        "cancel": True,
        "configure": True,
        "hooks": list(c.hooks),
        "commands": [{"name": n, "description": d, "args_hint": h} for n, (_, d, h) in c.commands.items()],
        "tools": [{"name": n, "toolset": t["toolset"], "schema": t["schema"], "description": t["description"],
                   "emoji": t["emoji"], "override": t["override"], "requires_env": t["requires_env"],
                   "override_allowed": bool(c._context.get("allow_tool_override") or c.manifest.source == "bundled"),
                   "has_check": t["check_fn"] is not None, "is_async": t["is_async"]} for n, t in c.tools.items()],
        "cli_commands": [{"name": n, "help": e["help"], "description": e["description"]} for n, e in c.cli_commands.items()],
        "middleware": list(c.middleware),
        "system_prompt_sections": [{"id": i, "position": s["position"], "max_chars": s["max_chars"],
                                    "static": s["content"] if isinstance(s["content"], str) else None}
                                   for i, s in c.sections.items()],
        "memory_providers": [{"name": n} for n in c.memory_providers],
        "context_engines": [{"name": n} for n in c.context_engines],
        "subscriptions": list(c.subscriptions),
        "skills": [{"name": n, "path": k["path"], "description": k["description"]} for n, k in c.skills.items()],
        "inert": c.inert + [{"kind": "hook", "name": n, "reason": "Atrium has no such moment, so it is never called"}
                            for n in c.other_hooks if n in FOREIGN_HOOKS and not any(
                                i["kind"] == "hook" and i["name"] == n for i in c.inert)],
        "unknown_hooks": [n for n in c.other_hooks if n not in FOREIGN_HOOKS],
        "warnings": c.warnings,
    }


def _event(params):
    event_id = params.get("event_id", "")
    hook = params.get("hook", "")
    payload = params.get("payload") or {}
    kwargs = dict(payload) if isinstance(payload, dict) else {"payload": payload}
    kwargs.setdefault("event_id", event_id)
    kwargs.setdefault("redelivery", params.get("redelivery", False))
    kwargs.setdefault("hook", hook)
    done = {"event_id": event_id}
    call = _track_event(event_id)
    try:
        with _session_env(kwargs.get("session_key"), **_bound(kwargs)):
            for fn in (_ctx.hooks.get(hook, []) if _ctx else []):
                try:
                    _call(fn, kwargs)
                except Exception as exc:  # noqa: BLE001
                    tb = traceback.format_exc()
                    _report(hook, fn, exc, kwargs, tb)
                    done.setdefault("error", "%s: %s" % (type(exc).__name__, exc))
                    done.setdefault("traceback", tb)
    finally:
        cancelled = _untrack(call)
    if cancelled:
        print("atrium runner: the cancelled %s event %s ended; its outcome is dropped" % (hook, event_id), file=sys.stderr)
        return
    _send({"method": "event_done", "params": done})


class _AttrDict(dict):
    """A dict whose keys are also attributes, recursively (a gateway event
    read as event.text or event["text"]); a missing attribute is None."""

    @classmethod
    def wrap(cls, value):
        if isinstance(value, dict):
            return cls({k: cls.wrap(v) for k, v in value.items()})
        if isinstance(value, list):
            return [cls.wrap(v) for v in value]
        return value

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self.get(name)


def _sync_hook(hook, params):
    """A hook called in line: pre_llm_call answers {"context": ...}; the
    others {"results": [...]}, the non-None answers in callback order."""
    payload = params.get("payload") or {}
    kwargs = dict(payload) if isinstance(payload, dict) else {"payload": payload}
    if hook == "pre_gateway_dispatch":
        # The familiar API hands callbacks the message as an object
        # (event.text, event.source.user_id); a dict view stays available.
        for key in ("event", "gateway"):
            if isinstance(kwargs.get(key), dict):
                kwargs[key] = _AttrDict.wrap(kwargs[key])
    callbacks = _ctx.hooks.get(hook, []) if _ctx else []
    budget = _request_budget()
    deadline = None if budget is None else time.monotonic() + budget
    results, errors = [], []
    with _session_env(kwargs.get("session_key"), **_bound(kwargs)):
        for fn in callbacks:
            try:
                if hook in BOUNDED_HOOKS:
                    value = _run_bounded(hook, fn, kwargs, deadline)
                    if value is _SKIPPED:
                        if hook in FAIL_CLOSED_HOOKS:
                            results.append({"action": "block", "message": TIMEOUT_BLOCK_MESSAGE})
                        errors.append({"callback": _fn_name(fn), "error": "timed out or still running"})
                        continue
                else:
                    value = _call(fn, kwargs)
            except Exception as exc:  # noqa: BLE001
                real, tb = (exc.exc, exc.tb) if isinstance(exc, _Raised) else (exc, traceback.format_exc())
                _report(hook, fn, real, kwargs, tb)
                errors.append({"callback": _fn_name(fn), "error": "%s: %s" % (type(real).__name__, real), "traceback": tb})
                if hook in FAIL_CLOSED_HOOKS:
                    results.append({"action": "block", "message": "%s plugin callback %s raised %s: %s"
                                    % (hook, _fn_name(fn), type(real).__name__, str(real)[:200])})
                continue
            if value is not None:
                results.append(value)
    if hook == "pre_llm_call":
        texts = []
        for r in results:
            if isinstance(r, dict):
                r = r.get("context")
            if isinstance(r, str) and r.strip():
                texts.append(r)
        if errors and not texts and len(errors) == len(callbacks):
            e = errors[-1]
            raise _RPCError(-32000, e["error"], e.get("traceback"))
        return {"context": "\n\n".join(texts) if texts else None}
    out = {"results": results}
    if errors:
        out["errors"] = errors
    return out


def _command(params):
    name = params.get("name", "")
    entry = _ctx.commands.get(name) if _ctx else None
    if entry is None:
        raise _RPCError(-32601, "no command /%s" % name)
    src = params.get("source")
    source = None
    if src:
        source = types.SimpleNamespace(user_id=src.get("user_id", ""), chat_id=src.get("chat_id", ""),
                                       thread_id=src.get("thread_id", ""), chat_type=src.get("chat_type", ""),
                                       user_name=src.get("user_name", ""))
    raw = params.get("args", "")
    kwargs = {"args": raw, "raw_args": raw, "session_id": params.get("session_id", ""),
              "session_key": params.get("session_key", ""), "platform": params.get("platform", ""), "source": source,
              "user_id": source.user_id if source is not None else None}
    fn = entry[0]
    with _session_env(params.get("session_key"), **_bound(params)):
        try:
            sig = inspect.signature(fn)
            names = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            positional = (raw,) if (names and names[0] not in kwargs) or (
                not names and any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())) else ()
        except (TypeError, ValueError):
            positional = (raw,)
        out = _call(fn, kwargs, positional=positional)
    return {"output": "" if out is None else str(out)}


def _normalize_tool_result(v):
    if isinstance(v, str):
        return v
    try:
        return json.dumps(v, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(v)


def _tool(name, method, params):
    t = _ctx.tools.get(name)
    if t is None:
        raise _RPCError(-32601, "no tool %r" % name)
    if method == "check":
        missing = [e for e in t["requires_env"] if not os.environ.get(e)]
        if missing:
            return {"available": False, "reason": "requires_env: %s not set" % ", ".join(missing)}
        if t["check_fn"] is not None:
            try:
                ok = bool(_call(t["check_fn"], {}))
            except Exception as exc:  # noqa: BLE001
                return {"available": False, "reason": "check_fn raised %s: %s" % (type(exc).__name__, exc)}
            if not ok:
                return {"available": False, "reason": "check_fn returned False"}
        return {"available": True}
    if method != "call":
        raise _RPCError(-32601, "tool method %r" % method)
    args = params.get("args") or {}
    kw = {k: params.get(k) for k in ("task_id", "session_id", "tool_call_id", "turn_id") if k in params}
    with _session_env(params.get("session_key"), **_bound(params)):
        try:
            result = _call(t["handler"], kw, positional=(args,))
        except Exception as exc:  # noqa: BLE001
            _report("tool:" + name, t["handler"], exc, {"args": args, **kw}, traceback.format_exc(), surface="tool")
            return {"result": json.dumps({"error": "Tool execution failed: %s: %s" % (type(exc).__name__, exc)}),
                    "error": "%s: %s" % (type(exc).__name__, exc), "error_type": type(exc).__name__}
    return {"result": _normalize_tool_result(result)}


_PROVIDER_METHODS = {"is_available", "initialize", "system_prompt_block", "prefetch", "queue_prefetch", "sync_turn",
                     "get_tool_schemas", "handle_tool_call", "on_turn_start", "on_session_end", "on_session_switch",
                     "on_pre_compress", "on_delegation", "shutdown", "recall_status", "on_memory_write"}


def _memory(name, method, params):
    host = _ctx.memory_providers.get(name)
    if host is None:
        raise _RPCError(-32601, "no memory provider %r" % name)
    if method not in _PROVIDER_METHODS:
        raise _RPCError(-32601, "memory provider method %r" % method)
    args = params.get("args") or []
    kwargs = params.get("kwargs") or {}
    session_id = params.get("session_id") or kwargs.get("session_id") or ""
    who = (params.get("user_id"), params.get("agent_context"), params.get("parent_session_id"))
    with _session_env(params.get("session_key")):
        if method == "is_available":
            ok = host.ensure(session_id, params.get("platform"), *who)
            return {"available": ok, "reason": host.reason}
        if method == "initialize":
            ok = host.ensure(session_id, params.get("platform"), *who)
            return {"available": ok, "reason": host.reason}
        if method == "shutdown" and not host.ready:
            return {"value": None}
        if not host.ensure(session_id, params.get("platform"), *who):
            return {"available": False, "reason": host.reason, "value": None}
        value = _call(getattr(host.provider, method), kwargs, positional=tuple(args))
    if method == "recall_status" and value is not None:
        value = {"provider_label": value.provider_label, "count": value.count, "glyph": value.glyph}
    return {"available": True, "value": value}


def _engine(name, method, params):
    host = _ctx.context_engines.get(name)
    if host is None:
        raise _RPCError(-32601, "no context engine %r" % name)
    allowed = {"compress", "should_compress", "get_tool_schemas", "handle_tool_call", "on_session_start",
               "on_session_end", "on_session_reset", "update_from_response", "update_model", "get_status",
               "has_content_to_compress", "prune_tool_results_only"}
    if method not in allowed:
        raise _RPCError(-32601, "context engine method %r" % method)
    args, kwargs = params.get("args") or [], params.get("kwargs") or {}
    with _session_env(params.get("session_key")):
        if method == "on_session_start":
            host.boundary(params)
            return {"value": None}
        if method == "on_session_end":
            return {"value": host.end(params, args, kwargs)}
        engine = host.ensure(params) or host.engine
        value = _call(getattr(engine, method), kwargs, positional=tuple(args))
    return {"value": value}


def _cli(name, params):
    entry = _ctx.cli_commands.get(name)
    if entry is None:
        raise _RPCError(-32601, "no CLI command %r" % name)
    argv = [str(a) for a in params.get("argv") or []]
    parser = argparse.ArgumentParser(prog=params.get("prog") or ("atrium " + name),
                                     description=entry["description"] or entry["help"] or None)
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            entry["setup_fn"](parser)
            if entry["handler_fn"] is not None:
                parser.set_defaults(func=entry["handler_fn"])
            args = parser.parse_args(argv)
            fn = getattr(args, "func", None)
            if fn is None:
                parser.print_help()
            else:
                result = fn(args)
                if inspect.isawaitable(result):
                    result = _await(result)
                if isinstance(result, int) and not isinstance(result, bool):
                    code = result
        except SystemExit as exc:
            if exc.code is None:
                code = 0
            elif isinstance(exc.code, int):
                code = exc.code
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            code = 1
    return {"exit_code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def _middleware(kind, params):
    payload = params.get("payload") or {}
    results = []
    for fn in _ctx.middleware.get(kind, []):
        try:
            value = _call(fn, dict(payload))
        except Exception as exc:  # noqa: BLE001
            _report(kind, fn, exc, payload, traceback.format_exc(), surface="middleware")
            continue
        if value is not None:
            results.append(value)
            key = "request" if kind == "llm_request" else "args"
            if isinstance(value, dict) and isinstance(value.get(key), dict):
                payload = dict(payload, **{key: value[key]})
    return {"results": results}


# ---------------------------------------------------------------------------
# Execution middleware: callback(..., next_call) wraps the call itself, which
# runs in the process of the turn. The runner runs this plugin's callbacks in
# order in a worker thread; when the last one calls next_call, the request
# is answered {"next": value, "token": t} and the worker waits; the host runs
# the rest of the chain (other plugins, then the call) and sends "resume"
# with the outcome. Answers: {"result": value}, {"downstream_error": msg}
# (the call failed and no callback took the failure, or a callback failed
# after it), {"blocked": reason, "metadata"} (LLMExecutionBlocked). A plugin
# asks next at most once per start: next_call is single-use.
# ---------------------------------------------------------------------------

EXECUTION_RESUME_LIMIT = 900.0   # s a worker waits for the host to resume it
_frames = {}                     # token -> _Frame
_frames_lock = threading.Lock()


class _Downstream(Exception):
    """The call under next_call failed; carries the error a callback sees."""

    def __init__(self, original):
        super().__init__(str(original))
        self.original = original


class DownstreamCallError(RuntimeError):
    """What next_call raises when the wrapped call failed in the host."""


class _Frame:
    def __init__(self, token):
        self.token = token
        self.lock = threading.Lock()
        self.step = threading.Event()    # set when the worker asked next or ended
        self.resumed = threading.Event()
        self.answer = None               # what the current request answers
        self.outcome = None              # (value, error message) of the downstream call
        self.abandoned = False

    def ask_next(self, value):
        """Called by the worker: hands value to the host and waits for the
        downstream outcome."""
        with self.lock:
            if self.abandoned:
                raise DownstreamCallError("the host stopped waiting for this middleware")
            self.answer = {"next": _jsonable(value), "token": self.token}
            self.step.set()
        _inbox.put(_WAKE)
        if not self.resumed.wait(EXECUTION_RESUME_LIMIT):
            raise DownstreamCallError("the host did not resume the call within %.0f s" % EXECUTION_RESUME_LIMIT)
        value, error = self.outcome
        if error is not None:
            raise DownstreamCallError(error)
        return value

    def end(self, answer):
        with self.lock:
            self.answer = answer
            self.step.set()
        _inbox.put(_WAKE)

    def wait(self):
        """Serves the host until the worker asks next or ends; the answer."""
        budget = _request_budget()
        deadline = None if budget is None else time.monotonic() + budget
        if not _serve_until(self.step.is_set, deadline):
            with self.lock:
                self.abandoned = True
            with _frames_lock:
                _frames.pop(self.token, None)
            raise _RPCError(-32000, "execution middleware did not answer within %.1f s" % budget)
        with self.lock:
            answer, self.answer = self.answer, None
            self.step.clear()
        if "next" not in answer:
            with _frames_lock:
                _frames.pop(self.token, None)
        return answer


def _run_chain(kind, callbacks, payload, context, terminal):
    """Runs callbacks in order around terminal, as the familiar API does: a
    callback that raises before it calls next_call is skipped; one that
    raises after a successful next_call returns that call's result; a
    failure of the call itself reaches the caller unless a callback takes
    it; LLMExecutionBlocked stops the chain."""
    key = "request" if kind == "llm_execution" else "args"

    def at(i, value):
        if i >= len(callbacks):
            return terminal(value)
        fn = callbacks[i]
        state = {"called": False, "ok": False, "result": None}

        def next_call(next_value=None):
            if state["called"]:
                raise RuntimeError("middleware %r callback %s called next_call() more than once; the call runs once"
                                   % (kind, _fn_name(fn)))
            state["called"] = True
            try:
                state["result"] = at(i + 1, value if next_value is None else next_value)
            except Exception as exc:  # noqa: BLE001 - what lies below failed, not this callback
                raise _Downstream(exc) from exc
            state["ok"] = True
            return state["result"]

        kwargs = dict(context)
        kwargs[key], kwargs["next_call"] = value, next_call
        try:
            return _call(fn, kwargs)
        except _Downstream as exc:
            raise exc.original
        except Exception as exc:  # noqa: BLE001
            if type(exc).__name__ == "LLMExecutionBlocked":
                raise
            _report(kind, fn, exc, kwargs, traceback.format_exc(), surface="middleware")
            if state["ok"]:
                return state["result"]
            if state["called"]:
                raise
            return at(i + 1, value)

    return at(0, payload)


def _execution(kind, method, params):
    if method == "resume":
        token = params.get("token")
        with _frames_lock:
            frame = _frames.get(token)
        if frame is None:
            raise _RPCError(-32602, "no execution waits under token %r" % token)
        frame.outcome = (params.get("result"), params.get("error"))
        frame.resumed.set()
        return frame.wait()
    if method != "start":
        raise _RPCError(-32601, "unknown execution middleware method %r" % method)
    payload = dict(params.get("payload") or {})
    key = "request" if kind == "llm_execution" else "args"
    value = payload.pop(key, None)
    if kind == "llm_execution":
        value = _AttrDict.wrap(value)
    callbacks = list(_ctx.middleware.get(kind, []))
    frame = _Frame("x%d" % next(_ids))
    with _frames_lock:
        _frames[frame.token] = frame

    def terminal(v):
        out = frame.ask_next(v)
        return _AttrDict.wrap(out) if kind == "llm_execution" else out

    def work():
        try:
            result = _run_chain(kind, callbacks, value, payload, terminal)
            frame.end({"result": _jsonable(result)})
        except DownstreamCallError as exc:
            frame.end({"downstream_error": str(exc)})
        except Exception as exc:  # noqa: BLE001
            if type(exc).__name__ == "LLMExecutionBlocked":
                frame.end({"blocked": str(getattr(exc, "reason", exc)), "metadata": _jsonable(getattr(exc, "metadata", {}))})
            else:
                frame.end({"downstream_error": "%s: %s" % (type(exc).__name__, exc)})

    threading.Thread(target=contextvars.copy_context().run, args=(work,), name="atrium-middleware-" + kind,
                     daemon=True).start()
    return frame.wait()


class _AttrDict(dict):
    """A model response or request as a dict whose keys read as attributes
    too (response.choices[0].message.content), as the provider's objects
    read in the familiar agent."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    @classmethod
    def wrap(cls, v):
        if isinstance(v, dict):
            return cls({k: cls.wrap(x) for k, x in v.items()})
        if isinstance(v, list):
            return [cls.wrap(x) for x in v]
        return v


def _jsonable(v):
    """v as JSON can carry it: objects with a model_dump/dict/__dict__ are
    turned into dicts, anything else into its text."""
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    for attr in ("model_dump", "dict", "to_dict"):
        f = getattr(v, attr, None)
        if callable(f):
            try:
                return _jsonable(f())
            except Exception:  # noqa: BLE001
                pass
    if hasattr(v, "__dict__"):
        return _jsonable({k: x for k, x in vars(v).items() if not k.startswith("_")})
    return str(v)


def _section(section_id, params):
    s = _ctx.sections.get(section_id)
    if s is None:
        raise _RPCError(-32601, "no system prompt section %r" % section_id)
    content = s["content"]
    try:
        value = content(types.MappingProxyType(dict(params.get("session_info") or {}))) if callable(content) else content
    except Exception as exc:  # noqa: BLE001
        return {"text": None, "skipped": "raised %s: %s" % (type(exc).__name__, exc)}
    if not isinstance(value, str):
        return {"text": None, "skipped": "returned %s, not str" % type(value).__name__}
    text = value.strip()
    if len(text) > s["max_chars"]:
        return {"text": None, "skipped": "exceeded max_chars (%d > %d)" % (len(text), s["max_chars"])}
    return {"text": text or None}


def _deliver(event, params):
    payload = params.get("payload") or {}
    delivered, errors = 0, []
    for fn in _ctx.subscriptions.get(event, []):
        try:
            _call(fn, copy.deepcopy(payload))
            delivered += 1
        except Exception as exc:  # noqa: BLE001
            _report(event, fn, exc, payload, traceback.format_exc(), surface="event")
            errors.append("%s: %s" % (type(exc).__name__, exc))
    return {"delivered": delivered, "errors": errors}


def _capability(params):
    kind, name, method = params.get("kind"), params.get("name"), params.get("method")
    p = params.get("params") or {}
    if _ctx is None:
        raise _RPCError(-32603, "not initialized")
    if kind == "tool":
        return _tool(name, method, p)
    if kind == "memory_provider":
        return _memory(name, method, p)
    if kind == "context_engine":
        return _engine(name, method, p)
    if kind == "cli_command":
        return _cli(name, p)
    if kind == "middleware" and name in EXECUTION_MIDDLEWARE:
        return _execution(name, method, p)
    if kind == "middleware":
        return _middleware(name, p)
    if kind == "system_prompt_section":
        return _section(name, p)
    if kind == "subscription":
        return _deliver(name, p)
    raise _RPCError(-32601, "unknown capability kind %r" % kind)


def _error_msg(mid, code, message, tb=None):
    err = {"code": code, "message": message}
    if tb:
        err["data"] = {"traceback": tb}
    return {"id": mid, "error": err}


def _error(mid, code, message, tb=None):
    _send(_error_msg(mid, code, message, tb))


_exiting = False
_init_failed = False


def _keep_work_dir():
    """The plugin's working folder is its current directory and where it
    writes. Plugins that tidy HERMES_HOME (which is the profile's folder
    here) remove empty folders, this one among them: it is made again, and
    entered again, before the plugin is called."""
    d = _ctx.work_dir if _ctx is not None else ""
    if not d or os.path.isdir(d):
        return
    try:
        os.makedirs(d, exist_ok=True)
        os.chdir(d)
    except OSError:
        pass


def _handle(msg):
    """Handles one message from the host (possibly nested in a wait)."""
    global _exiting, _init_failed
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    _keep_work_dir()
    if method == "event":
        _event(params)
        return
    if method == "shutdown":
        _exiting = True
        _inbox.put(_EOF)
        return
    if method is None:
        return
    if method == "initialize":
        try:
            result = _initialize(params)
        except BaseException as exc:  # noqa: BLE001 - reported to the host
            _error(mid, -32000, "register failed: %s" % exc, traceback.format_exc())
            _exiting = _init_failed = True
            _inbox.put(_EOF)
            return
        if mid is not None:
            _send({"id": mid, "result": result})
        return
    if mid is not None and _beside(method, params):
        _start_beside(mid, method, params)
        return
    # A bounded hook's wait ends by itself; with the callback timeout off it
    # would not, and only a restart could end it. A memory provider's or a
    # context engine's call (a recall over the network, a fold) is answered
    # as cancelled at once too, and its thread is interrupted
    # (tools.interrupt): a person who stops a turn does not cost the plugin
    # its process and what it holds; one that never returns is ended by the
    # callback timeout of the host's next request.
    bounded = _request_budget() is not None and (
        method in BOUNDED_HOOKS or (method == "capability" and params.get("kind") in _MAIN_CAPABILITIES))
    call = _track(mid, False, threading.get_ident()) if mid is not None and bounded else None
    cancelled = False
    try:
        answer = _respond(mid, method, params)
    finally:
        if call is not None:
            cancelled = _untrack(call)
    if cancelled:
        print("atrium runner: the cancelled %s ended; its answer is dropped" % _what(method, params), file=sys.stderr)
        return  # the host was answered then
    if mid is not None:
        _send(answer)


# Capability calls that run on the message pump and are answered at once
# when cancelled (the call itself ends when it returns).
_MAIN_CAPABILITIES = {"memory_provider", "context_engine"}


def _what(method, params):
    if method == "capability":
        return "%s %s.%s" % (params.get("kind"), params.get("name"), params.get("method"))
    return method


def _respond(mid, method, params):
    """The answer to one request of the host's: a result or an error."""
    try:
        if method == "command":
            result = _command(params)
        elif method == "capability":
            result = _capability(params)
        elif method in SYNC_HOOKS:
            result = _sync_hook(method, params)
        else:
            raise _RPCError(-32601, "unknown method %r" % method)
    except _RPCError as exc:
        return _error_msg(mid, exc.code, str(exc), exc.tb)
    except HostError as exc:
        return _error_msg(mid, -32000, "HostError: %s" % exc, traceback.format_exc())
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - sys.exit() in a tool fails the call, not the plugin
        tb = traceback.format_exc()
        print(tb, file=sys.stderr)
        return _error_msg(mid, -32000, "%s: %s" % (type(exc).__name__, exc), tb)
    return {"id": mid, "result": result}


# ---------------------------------------------------------------------------
# Calls beside the message pump, and cancellation
# ---------------------------------------------------------------------------
# A tool call or a slash command may take long (a fetch, a build), and a
# plugin serves every conversation of its profile: each runs on a thread of
# its own, so the others (and hooks, and events) do not wait behind it. The
# host may cancel a request (cancel notification: a person stopped the
# turn, the call's time ran out): a request still tracked here is answered
# at once with CODE_CANCELLED and its thread's interrupt is set
# (tools.interrupt); what it answers later is dropped. Tracked: the calls
# beside the pump and the bounded synchronous hooks (whose wait here ends by
# itself). Anything else is not answered, and the host restarts the plugin.


class _Call:
    def __init__(self, mid, beside):
        self.mid, self.beside = mid, beside
        self.ident = None
        self.cancelled = False


_calls = {}
_calls_lock = threading.Lock()


def _beside(method, params):
    if method == "command":
        return True
    return method == "capability" and params.get("kind") == "tool" and params.get("method") == "call"


def _track(mid, beside, ident=None):
    call = _Call(mid, beside)
    call.ident = ident
    with _calls_lock:
        _calls[mid] = call
    return call


def _track_event(event_id):
    """Tracks an observer event under way on this thread: its bound may run
    out, and the host then cancels it by event_id."""
    return _track(("event", event_id), False, threading.get_ident())


def _untrack(call):
    """Ends the tracking of call and clears its thread's interrupt (under
    the lock a cancel sets it under, so none outlives the call); whether it
    was cancelled."""
    with _calls_lock:
        if _calls.get(call.mid) is call:
            del _calls[call.mid]
        if call.ident is not None:
            _interrupt.set_interrupt(False, call.ident)
        return call.cancelled


def _start_beside(mid, method, params):
    call = _track(mid, True)
    what = params.get("name") or method

    def work():
        answer = None
        try:
            with _calls_lock:
                call.ident = threading.get_ident()
                skip = call.cancelled
            if skip:
                _interrupt.set_interrupt(True, call.ident, reason="cancelled before it began")
            else:
                answer = _respond(mid, method, params)
        finally:
            _close_thread_loop()
            cancelled = _untrack(call)
            if cancelled:
                print("atrium runner: the cancelled call %s ended; its answer is dropped" % what, file=sys.stderr)
            elif answer is not None:
                _send(answer)

    threading.Thread(target=work, name="atrium-call-" + str(what), daemon=True).start()


def _cancel(params):
    mid = params.get("id")
    reason = str(params.get("reason") or "cancelled")[:200]
    event_id = params.get("event_id")
    if isinstance(event_id, str) and event_id:
        mid = ("event", event_id)
    with _calls_lock:
        call = _calls.get(mid) if isinstance(mid, (int, str, tuple)) else None
        if call is None or call.cancelled:
            return
        call.cancelled = True
        running = sum(1 for c in _calls.values() if c.cancelled and c.beside)
        if call.ident is not None:
            _interrupt.set_interrupt(True, call.ident, reason=reason)
    if not call.beside:
        # The main thread is the message pump: what waits behind a cancelled
        # call that goes on (an event the host sends next, a request) would
        # wait for it, past its own bound. Past a grace the runner exits, and
        # the host starts it again and hands those on to the new process.
        watchdog = threading.Timer(_main_cancel_grace(), _still_running, args=(call,))
        watchdog.daemon = True
        watchdog.start()
    if isinstance(mid, tuple):
        _send({"method": "event_done", "params": {"event_id": event_id, "error": "cancelled: " + reason, "cancelled": True}})
        return
    _error(mid, CODE_CANCELLED, "cancelled: " + reason)
    if running > MAX_CANCELLED_RUNNING:
        _exit_for_restart("%d cancelled calls still run" % running)


def _main_cancel_grace():
    """How long a cancelled call may go on on the main thread: well inside
    the bound of what the host sends next."""
    return min(5.0, max(0.1, _callback_timeout() * 0.4))


def _still_running(call):
    with _calls_lock:
        running = _calls.get(call.mid) is call
    if running:
        _exit_for_restart("the cancelled %s still runs after %.1fs" % (
            "event %s" % call.mid[1] if isinstance(call.mid, tuple) else "request %s" % call.mid, _main_cancel_grace()))


def _exit_for_restart(why):
    print("atrium runner: %s; exiting so that the host starts the plugin again (nothing else ends it)" % why,
          file=sys.stderr)
    sys.stderr.flush()
    with _send_lock:  # never in the middle of a line on stdout
        os._exit(3)


def _shutdown():
    if _ctx is None:
        return
    for host in _ctx.memory_providers.values():
        if host.ready:
            try:
                host.provider.shutdown()
            except Exception:  # noqa: BLE001
                traceback.print_exc()
    for cb in reversed(_ctx.unload_callbacks):
        try:
            _call(cb, {})
        except Exception:  # noqa: BLE001
            traceback.print_exc()


def main(argv):
    global _plugin_dir
    if len(argv) != 2:
        print("usage: atrium_runner.py PLUGIN_DIR", file=sys.stderr)
        return 2
    _plugin_dir = argv[1]
    threading.Thread(target=_reader, name="atrium-reader", daemon=True).start()
    while True:
        msg = _inbox.get()
        if msg is _WAKE:
            continue
        if msg is _EOF:
            break
        _handle(msg)
        if _exiting:
            break
    if _init_failed:
        return 1
    _shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
