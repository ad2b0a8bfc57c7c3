"""How Atrium's host modules (hermes_cli.config, agent.context_compressor)
ask the Atrium process that runs the plugin for something. The runner sets
call; outside Atrium it stays None and those modules fall back."""

call = None  # call(method, params, timeout=None) -> the host's answer
