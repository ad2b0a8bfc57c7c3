"""Written the way public plugins of the familiar agent write these hooks:
transform_terminal_output declares only what it reads (output, command) and
takes the rest as **kwargs; pre_verify reads coding, changed_paths and
attempt. Each call is recorded in the plugin's working folder."""

import json
import os


def _record(kind, **fields):
    with open(os.path.join(os.getcwd(), "calls.jsonl"), "a") as f:
        f.write(json.dumps({"hook": kind, **fields}) + "\n")


def _squash(text):
    lines = []
    for line in text.split("\n"):
        lines.append(line.split("\r")[-1])
    return "\n".join(lines)


def _transform_terminal_output(output=None, command="", returncode=0, **kwargs):
    _record("transform_terminal_output", command=command, output=output, returncode=returncode,
            env_type=kwargs.get("env_type"), task_id=kwargs.get("task_id"))
    if not isinstance(output, str) or "\r" not in output:
        return None
    return _squash(output)


def _pre_verify(coding=False, changed_paths=None, attempt=0, **kwargs):
    _record("pre_verify", coding=coding, changed_paths=changed_paths, attempt=attempt)
    if coding and attempt == 0:
        return {"action": "continue", "message": "Run the tests for %s before finishing." % ", ".join(
            os.path.basename(p) for p in changed_paths or [])}
    return None


def register(ctx):
    ctx.register_hook("transform_terminal_output", _transform_terminal_output)
    ctx.register_hook("pre_verify", _pre_verify)
