"""The profile's configuration as plugins written for the familiar Python
plugin API read it (``from hermes_cli.config import load_config, cfg_get``,
``load_config_readonly``).

load_config() returns config.yaml as the Atrium host reads it now: its own
keys, without other plugins' settings; this plugin's settings
(plugins.entries.<id>.settings) are also at plugins.<id>, and model.default
names the model. The answer is kept while config.yaml is unchanged. Where no
host answers (a plugin loaded outside Atrium), it is {}.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Dict, Optional

from hermes_constants import get_hermes_home

_cache: Dict[str, Any] = {}


def get_config_path() -> Path:
    """The profile's config.yaml."""
    return get_hermes_home() / "config.yaml"


def _signature():
    try:
        st = os.stat(get_config_path())
        return (st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def load_config() -> Dict[str, Any]:
    """The configuration, as a new dict the caller may change."""
    sig = _signature()
    if "value" in _cache and _cache.get("sig") == sig:
        return copy.deepcopy(_cache["value"])
    import atrium_host

    call = atrium_host.call
    value: Dict[str, Any] = {}
    if call is not None:
        try:
            got = call("load_config", {}, timeout=10)
            if isinstance(got, dict):
                value = got
        except Exception:  # noqa: BLE001 - a plugin's config read never fails it
            value = {}
    _cache.update(sig=sig, value=value)
    return copy.deepcopy(value)


def load_config_readonly() -> Dict[str, Any]:
    """The same as load_config(). The familiar API hands callers that only
    read its cached dict itself; here it is a copy too, so a caller that
    writes to it anyway changes nothing for the next one."""
    return load_config()


def read_raw_config() -> Dict[str, Any]:
    """config.yaml's own keys (Atrium merges no defaults into it)."""
    return load_config()


def cfg_get(cfg: Optional[Dict[str, Any]], *keys: str, default: Any = None) -> Any:
    """cfg[k1][k2]...: default when a level is missing, not a mapping, or
    the value is None."""
    cur: Any = cfg
    for k in keys:
        if not isinstance(cur, dict) or k not in cur:
            return default
        cur = cur[k]
    return default if cur is None else cur


def get_env_value(key: str, default: Optional[str] = None) -> Optional[str]:
    """An environment variable the plugin may see (requires_env,
    optional_env)."""
    return os.environ.get(key, default)
