"""A plugin whose code lives in a package of its own, imported by its
absolute name, as plugins published for pip install are written."""

from layout_tools.setup import register  # noqa: F401
