"""The familiar agent's tools package, as far as plugins import from it
(tools.registry, tools.interrupt). Written for Atrium."""
