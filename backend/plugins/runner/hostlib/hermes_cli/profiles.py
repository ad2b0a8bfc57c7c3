"""The profile a plugin runs in (``from hermes_cli.profiles import
get_active_profile_name``). Atrium runs each plugin process for one profile:
its name is ATRIUM_PROFILE, its folder HERMES_HOME."""

from __future__ import annotations

import os
from pathlib import Path


def get_active_profile_name() -> str:
    """The profile's name: "default" for the root home."""
    return os.environ.get("ATRIUM_PROFILE") or "default"


def get_profile_home(name: str = "") -> Path:
    """The folder of a profile (this one when name is empty)."""
    home = Path(os.environ.get("HERMES_HOME") or os.environ.get("ATRIUM_HOME") or ".")
    if not name or name == get_active_profile_name():
        return home
    root = home.parent.parent if home.parent.name == "profiles" else home
    return root if name == "default" else root / "profiles" / name


def list_profiles() -> list:
    home = get_profile_home("default")
    names = ["default"]
    folder = home / "profiles"
    if folder.is_dir():
        names += sorted(p.name for p in folder.iterdir() if p.is_dir())
    return names
