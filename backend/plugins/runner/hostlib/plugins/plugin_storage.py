"""A plugin's own storage, as plugins written for the familiar Python plugin
API find it (``from plugins.plugin_storage import plugin_data_dir,
plugin_db``). In Atrium a plugin's data folder is its working folder,
<home>/plugins-data/<name>/: plugin_data_dir(its own name) is ctx.work_dir,
and another name is that plugin's folder beside it. The home is read at
every call.
"""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

__all__ = ["plugin_data_dir", "plugin_db"]

_NAME_RE = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$")


def _own_folder(name: str):
    """The running plugin's working folder when name is its id (a category
    plugin's "category/name" too) or its manifest's name, else None."""
    import atrium_host

    ctx = atrium_host.plugin
    if ctx is not None and ctx.work_dir:
        if name in (ctx.plugin_id, getattr(ctx.manifest, "name", None)):
            return Path(ctx.work_dir)
    if name and name == os.environ.get("ATRIUM_PLUGIN_NAME") and os.environ.get("ATRIUM_PLUGIN_WORKDIR"):
        return Path(os.environ["ATRIUM_PLUGIN_WORKDIR"])
    return None


def plugin_data_dir(name: str) -> Path:
    """The data folder of the plugin called name, made if missing. A name
    must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter
    or digit, without "..": anything else is a ValueError."""
    root = _own_folder(name) if isinstance(name, str) else None
    if root is None:
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or ".." in name:
            raise ValueError(f"invalid plugin name for storage: {name!r}")
        from hermes_constants import get_hermes_home

        root = get_hermes_home() / "plugins-data" / name
    root.mkdir(parents=True, exist_ok=True)
    return root


def plugin_db(name: str, filename: str = "data.db") -> sqlite3.Connection:
    """A connection to <data folder>/<filename> (created on first use): WAL
    where the file system allows it, foreign keys on, usable from any thread
    (check_same_thread=False; the caller owns its transactions). filename is
    a bare file name: a path is a ValueError."""
    if not isinstance(filename, str) or not filename or Path(filename).name != filename or filename in (".", ".."):
        raise ValueError(f"invalid plugin db filename: {filename!r}")
    conn = sqlite3.connect(str(plugin_data_dir(name) / filename), check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError:
        pass  # a file system without shared memory keeps the default journal
    conn.execute("PRAGMA foreign_keys=ON")
    return conn
