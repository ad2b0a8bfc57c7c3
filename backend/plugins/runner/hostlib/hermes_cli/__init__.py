"""Host modules for plugins written for the familiar Python plugin API
(hermes_cli.profiles). Written for Atrium."""
