"""session-index: a small per-session index in the plugin's work folder.

Each session gets an entry in index.json and a sidecar file
sessions/<session_id>.json. on_session_delete drops the entries and the
sidecars of every removed or archived row (``deleted_ids or [session_id]``),
so the index shrinks when sessions go. Deliveries may repeat (same event_id):
everything here is idempotent.
"""

import json
import os
import tempfile
import time


def _work_dir():
    d = os.environ.get("ATRIUM_PLUGIN_WORKDIR") or _STATE.get("work_dir") or os.getcwd()
    os.makedirs(os.path.join(d, "sessions"), exist_ok=True)
    return d


_STATE = {}


def _index_path():
    return os.path.join(_work_dir(), "index.json")


def _load():
    try:
        with open(_index_path(), encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(index):
    d = _work_dir()
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".index-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(index, f, sort_keys=True)
    os.replace(tmp, _index_path())


def _sidecar(session_id):
    safe = "".join(c for c in session_id if c.isalnum() or c in "-_")
    return os.path.join(_work_dir(), "sessions", safe + ".json")


def on_session_start(session_id, platform="", **_):
    index = _load()
    entry = index.setdefault(session_id, {"started_at": time.time(), "platform": platform})
    _save(index)
    with open(_sidecar(session_id), "w", encoding="utf-8") as f:
        json.dump(entry, f)


def on_session_delete(session_id, deleted_ids=None, reason="", **_):
    ids = deleted_ids or [session_id]
    index = _load()
    changed = False
    for sid in ids:
        if index.pop(sid, None) is not None:
            changed = True
        try:
            os.remove(_sidecar(sid))
        except FileNotFoundError:
            pass
    if changed:
        _save(index)


def register(ctx):
    if getattr(ctx, "work_dir", ""):
        _STATE["work_dir"] = ctx.work_dir
    ctx.register_hook("on_session_start", on_session_start)
    ctx.register_hook("on_session_delete", on_session_delete)
