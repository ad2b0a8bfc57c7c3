"""How Atrium's host modules (hermes_cli.config, agent.context_compressor,
plugins.plugin_storage, tools.registry) reach the Atrium process that runs
the plugin and the plugin itself. The runner sets both; outside Atrium they
stay None and those modules fall back."""

call = None  # call(method, params, timeout=None) -> the host's answer
plugin = None  # the running plugin's ctx (plugin_id, work_dir, manifest, register_tool, loaded)
