"""An audit log in the shape public audit plugins have: each callback
declares exactly the arguments it reads, nothing more."""

import json
import os

from hermes_cli.profiles import get_active_profile_name
from hermes_constants import get_hermes_home

_ctx = None


def _log(hook, **fields):
    with open(os.path.join(_ctx.work_dir, "audit.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"hook": hook, **fields}, default=str) + "\n")


def on_pre_llm_call(session_id, task_id, turn_id, user_message, conversation_history, is_first_turn, model,
                    platform, parent_session_id, sender_id, telemetry_schema_version):
    _log("pre_llm_call", session_id=session_id, task_id=task_id, turn_id=turn_id, user_message=user_message,
         conversation_history=conversation_history, is_first_turn=is_first_turn, model=model, platform=platform,
         parent_session_id=parent_session_id, sender_id=sender_id, telemetry_schema_version=telemetry_schema_version,
         hermes_home=str(get_hermes_home()), profile=get_active_profile_name(),
         session_key_env=os.environ.get("HERMES_SESSION_KEY"))


def on_post_llm_call(session_id, task_id, turn_id, user_message, assistant_response, conversation_history, model,
                     platform):
    _log("post_llm_call", session_id=session_id, task_id=task_id, turn_id=turn_id, user_message=user_message,
         assistant_response=assistant_response, history_roles=[m["role"] for m in conversation_history],
         model=model, platform=platform)


def on_post_tool_call(tool_name, args, result, task_id, session_id, tool_call_id, turn_id, duration_ms, status,
                      error_type, error_message):
    _log("post_tool_call", tool_name=tool_name, args=args, result=result, task_id=task_id, session_id=session_id,
         tool_call_id=tool_call_id, turn_id=turn_id, duration_ms_is_int=isinstance(duration_ms, int), status=status,
         error_type=error_type, error_message=error_message)


def on_session_start(session_id, model, platform):
    _log("on_session_start", session_id=session_id, model=model, platform=platform)


def on_session_end(session_id, task_id, turn_id, completed, failed, interrupted, turn_exit_reason, model, platform):
    _log("on_session_end", session_id=session_id, task_id=task_id, turn_id=turn_id, completed=completed,
         failed=failed, interrupted=interrupted, turn_exit_reason=turn_exit_reason, model=model, platform=platform)


def on_pre_command(surface, command, alias_used, args_raw, session_key, platform):
    _log("pre_command", surface=surface, command=command, alias_used=alias_used, args_raw=args_raw,
         session_key=session_key, platform=platform)


def on_subagent_start(parent_session_id, child_session_id, child_goal):
    _log("subagent_start", parent_session_id=parent_session_id, child_session_id=child_session_id, child_goal=child_goal)


def on_subagent_stop(parent_session_id, child_session_id, child_status, child_summary, duration_ms):
    _log("subagent_stop", parent_session_id=parent_session_id, child_session_id=child_session_id,
         child_status=child_status, child_summary=child_summary, duration_ms=duration_ms)


def on_coffee_break(minutes):
    _log("on_coffee_break", minutes=minutes)


def stream_delta(delta):
    return None


def register(ctx):
    global _ctx
    _ctx = ctx
    ctx.register_hook("pre_llm_call", on_pre_llm_call)
    ctx.register_hook("post_llm_call", on_post_llm_call)
    ctx.register_hook("post_tool_call", on_post_tool_call)
    ctx.register_hook("on_session_start", on_session_start)
    ctx.register_hook("on_session_end", on_session_end)
    ctx.register_hook("pre_command", on_pre_command)
    ctx.register_hook("subagent_start", on_subagent_start)
    ctx.register_hook("subagent_stop", on_subagent_stop)
    ctx.register_hook("on_coffee_break", on_coffee_break)          # a name no host fires
    ctx.register_hook("on_stream_delta", stream_delta)             # a moment Atrium does not have
