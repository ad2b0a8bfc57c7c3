"""Reads the profile's configuration through hermes_cli.config, at load and
in its tool."""

import json

from hermes_cli.config import cfg_get, load_config

_at_load = {}


def _show(args, **kwargs):
    cfg = load_config()
    cfg["memory"] = "changed by the caller"  # a copy: the next load is whole
    cfg = load_config()
    return json.dumps({
        "at_load": _at_load.get("greeting"),
        "greeting": cfg_get(cfg, "plugins", "hermes-layout", "greeting", default=""),
        "provider": cfg_get(cfg, "memory", "provider", default="none"),
        "model": cfg_get(cfg, "model", "default", default=""),
        "entries": sorted(cfg_get(cfg, "plugins", "entries", default={})),
        "missing": cfg_get(cfg, "no", "such", "key", default="fallback"),
    }, sort_keys=True)


def register(ctx):
    _at_load["greeting"] = cfg_get(load_config(), "plugins", "hermes-layout", "greeting", default="")
    ctx.register_tool(name="layout_config", toolset="layout",
                      schema={"name": "layout_config", "description": "Show what the plugin reads of the configuration.",
                              "parameters": {"type": "object", "properties": {}}},
                      handler=_show)
