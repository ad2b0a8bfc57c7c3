"""Host modules Atrium's Python runner ships under the names plugins written
for the familiar Python plugin API import (agent.memory_provider,
agent.context_engine). Written for Atrium; same public shape."""
