#!/usr/bin/env python3
"""Atrium's Python plugin runner (standard library only).

Usage: python3 atrium_runner.py PLUGIN_DIR

Loads PLUGIN_DIR/__init__.py, calls its register(ctx) and speaks the Atrium
plugin protocol (docs/plugin-protocol.md): JSON-RPC 2.0, one JSON object per
line on stdin/stdout. Anything the plugin prints goes to stderr, which the
host logs under the plugin's name.
"""

import asyncio
import importlib.util
import inspect
import json
import os
import sys
import traceback
import types

PROTOCOL_VERSION = 1

_out = sys.stdout
sys.stdout = sys.stderr  # a stray print() must never corrupt the protocol stream


def _send(obj):
    obj["jsonrpc"] = "2.0"
    _out.write(json.dumps(obj, default=str) + "\n")
    _out.flush()


class PluginContext:
    """What register(ctx) receives: the familiar registration API."""

    def __init__(self, name="", settings=None, work_dir=""):
        self.name = name
        self.settings = settings or {}
        self.work_dir = work_dir
        self.hooks = {}  # name -> [callbacks]
        self.commands = {}  # name -> (handler, description)

    def register_hook(self, name, fn=None):
        if fn is None:  # decorator form
            def deco(f):
                self.register_hook(name, f)
                return f
            return deco
        self.hooks.setdefault(name, []).append(fn)
        return fn

    def register_command(self, name, handler=None, description="", **_ignored):
        if handler is None:
            def deco(f):
                self.register_command(name, f, description)
                return f
            return deco
        self.commands[name.lstrip("/").lower()] = (handler, description or "")
        return handler

    def log(self, message, level="info"):
        _send({"method": "log", "params": {"level": level, "message": str(message)}})


def _call(fn, kwargs, positional=None):
    """Calls fn with the keyword arguments its signature declares (all of them
    with **kwargs); awaits a coroutine."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    args = []
    if sig is None:
        use = dict(kwargs)
    else:
        params = sig.parameters.values()
        if any(p.kind == p.VAR_KEYWORD for p in params):
            use = dict(kwargs)
        else:
            use = {p.name: kwargs[p.name] for p in params
                   if p.name in kwargs and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        if positional is not None:
            names = [p.name for p in sig.parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if names and names[0] not in kwargs:
                args.append(positional)
            elif not names and any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
                args.append(positional)
    result = fn(*args, **use)
    if inspect.isawaitable(result):
        result = _run(result)
    return result


_loop = None


def _run(awaitable):
    global _loop
    if _loop is None:
        _loop = asyncio.new_event_loop()
    return _loop.run_until_complete(awaitable)


def _source(obj):
    if not obj:
        return None
    return types.SimpleNamespace(
        user_id=obj.get("user_id", ""), chat_id=obj.get("chat_id", ""),
        thread_id=obj.get("thread_id", ""), chat_type=obj.get("chat_type", ""),
        user_name=obj.get("user_name", ""))


def _error(mid, code, message, tb=None):
    err = {"code": code, "message": message}
    if tb:
        err["data"] = {"traceback": tb}
    _send({"id": mid, "error": err})


def _load(plugin_dir):
    path = os.path.join(plugin_dir, "__init__.py")
    name = "atrium_plugin_" + "".join(c if c.isalnum() else "_" for c in os.path.basename(os.path.abspath(plugin_dir)))
    spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=[plugin_dir])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv):
    if len(argv) != 2:
        print("usage: atrium_runner.py PLUGIN_DIR", file=sys.stderr)
        return 2
    plugin_dir = argv[1]
    ctx = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            print("atrium runner: ignoring a malformed line from the host", file=sys.stderr)
            continue
        method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            try:
                work_dir = params.get("work_dir") or os.environ.get("ATRIUM_PLUGIN_WORKDIR", "")
                if work_dir:
                    os.environ.setdefault("ATRIUM_PLUGIN_WORKDIR", work_dir)
                ctx = PluginContext(params.get("name", ""), params.get("settings"), work_dir)
                module = _load(plugin_dir)
                reg = getattr(module, "register", None)
                if reg is None:
                    raise RuntimeError("%s/__init__.py has no register(ctx)" % plugin_dir)
                reg(ctx)
            except BaseException as exc:  # noqa: BLE001 - reported to the host
                _error(mid, -32000, "register failed: %s" % exc, traceback.format_exc())
                return 1
            _send({"id": mid, "result": {
                "protocol_version": PROTOCOL_VERSION,
                "hooks": list(ctx.hooks),
                "commands": [{"name": n, "description": d} for n, (_, d) in ctx.commands.items()],
            }})
        elif method == "event":
            event_id = params.get("event_id", "")
            payload = params.get("payload") or {}
            kwargs = dict(payload) if isinstance(payload, dict) else {"payload": payload}
            kwargs.setdefault("event_id", event_id)
            kwargs.setdefault("redelivery", params.get("redelivery", False))
            kwargs.setdefault("hook", params.get("hook", ""))
            done = {"event_id": event_id}
            for fn in (ctx.hooks.get(params.get("hook"), []) if ctx else []):
                try:
                    _call(fn, kwargs)
                except Exception as exc:  # noqa: BLE001
                    tb = traceback.format_exc()
                    print(tb, file=sys.stderr)
                    done.setdefault("error", "%s: %s" % (type(exc).__name__, exc))
                    done.setdefault("traceback", tb)
            _send({"method": "event_done", "params": done})
        elif method == "pre_llm_call":
            payload = params.get("payload") or {}
            kwargs = dict(payload) if isinstance(payload, dict) else {"payload": payload}
            texts, failure = [], None
            for fn in (ctx.hooks.get("pre_llm_call", []) if ctx else []):
                try:
                    r = _call(fn, kwargs)
                except Exception as exc:  # noqa: BLE001
                    failure = (exc, traceback.format_exc())
                    print(failure[1], file=sys.stderr)
                    continue
                if isinstance(r, dict):
                    r = r.get("context")
                if isinstance(r, str) and r.strip():
                    texts.append(r)
            if failure and not texts:
                _error(mid, -32000, "%s: %s" % (type(failure[0]).__name__, failure[0]), failure[1])
            else:
                _send({"id": mid, "result": {"context": "\n\n".join(texts) if texts else None}})
        elif method == "command":
            name = params.get("name", "")
            entry = ctx.commands.get(name) if ctx else None
            if entry is None:
                _error(mid, -32601, "no command /%s" % name)
                continue
            kwargs = {
                "args": params.get("args", ""), "raw_args": params.get("args", ""),
                "session_id": params.get("session_id", ""), "session_key": params.get("session_key", ""),
                "platform": params.get("platform", ""), "source": _source(params.get("source")),
            }
            try:
                out = _call(entry[0], kwargs, positional=params.get("args", ""))
            except Exception as exc:  # noqa: BLE001
                tb = traceback.format_exc()
                print(tb, file=sys.stderr)
                _error(mid, -32000, "%s: %s" % (type(exc).__name__, exc), tb)
                continue
            _send({"id": mid, "result": {"output": "" if out is None else str(out)}})
        elif method == "shutdown":
            return 0
        elif mid is not None:
            _error(mid, -32601, "unknown method %r" % method)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
