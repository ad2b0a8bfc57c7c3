"""A plugin whose register() raises: it is in error, not restarted on every
command."""


def register(ctx):
    raise RuntimeError("this plugin is broken on purpose")
