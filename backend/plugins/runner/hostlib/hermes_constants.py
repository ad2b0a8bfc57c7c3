"""Where the profile lives (``from hermes_constants import get_hermes_home``),
for plugins written for the familiar Python plugin API. In Atrium it is the
profile's data folder (HERMES_HOME, set for every plugin process): the root
home for the profile "default", <root>/profiles/<name> for the others.
Atrium has no context-local home override, so the process's home is the home.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union


def get_process_hermes_home() -> Path:
    """The home of this process: the profile's folder."""
    return Path(os.environ.get("HERMES_HOME") or os.environ.get("ATRIUM_HOME") or os.getcwd())


def get_hermes_home_override() -> Optional[str]:
    """Always None: Atrium runs each plugin process for one profile."""
    return None


def get_hermes_home() -> Path:
    """The profile's home folder."""
    return get_process_hermes_home()


def display_hermes_home() -> str:
    return str(get_hermes_home())


def hermes_home_key(path: Union[str, Path, None] = None) -> str:
    """A stable key for a home folder (this one without path)."""
    return os.path.normcase(str(Path(path if path is not None else get_hermes_home()).expanduser().resolve()))


def _same(a: Path, b: Path) -> bool:
    return a == b or a.resolve() == b.resolve()


def get_default_hermes_root(*, home: Union[str, Path, None] = None) -> Path:
    """The root home, under which profiles/<name> are the other profiles'
    homes: of home when given, else of this process's home."""
    own = get_process_hermes_home()
    path = Path(home).expanduser() if home is not None else own
    if os.environ.get("ATRIUM_PROFILE") == "default" and _same(path, own):
        return path  # Atrium says so, even if its path ends in profiles/<x>
    return path.parent.parent if path.parent.name == "profiles" else path


def profile_name_for_home(path: Union[str, Path, None]) -> Optional[str]:
    """The profile whose home path is (or lies under, for a named profile):
    "default" for the root home, <name> for <root>/profiles/<name>, None for
    an empty path or a folder that is no profile's home."""
    if path is None or not str(path).strip():
        return None
    try:
        current = Path(path).expanduser()
        if os.environ.get("ATRIUM_PROFILE") and _same(current, get_process_hermes_home()):
            return os.environ["ATRIUM_PROFILE"]
        root = get_default_hermes_root()
        if _same(current, root):
            return "default"
        for candidate in (current, *current.parents):
            if candidate.parent.name == "profiles" and not candidate.name.startswith("."):
                if candidate == current or _same(candidate.parent.parent, root):
                    return candidate.name
    except (OSError, RuntimeError, ValueError):
        return None
    return None
