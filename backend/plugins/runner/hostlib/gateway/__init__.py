"""The familiar agent's gateway package, as far as plugins import from it
(gateway.session_context). Written for Atrium."""
