"""Where the profile lives (``from hermes_constants import get_hermes_home``),
for plugins written for the familiar Python plugin API. In Atrium it is the
profile's data folder (HERMES_HOME, set for every plugin process)."""

from __future__ import annotations

import os
from pathlib import Path


def get_hermes_home() -> Path:
    """The profile's home folder."""
    return Path(os.environ.get("HERMES_HOME") or os.environ.get("ATRIUM_HOME") or os.getcwd())


def display_hermes_home() -> str:
    return str(get_hermes_home())


def hermes_home_key() -> str:
    return str(get_hermes_home().resolve())
