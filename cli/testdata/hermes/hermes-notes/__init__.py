"""Tools, transforms, a slash command with an argument hint, a command line
command parsed by argparse, system prompt sections, middleware, events, the
host's model, and registrations Atrium has no moment for."""

import json
import os
from pathlib import Path

_ctx = None


def _record(kind, **fields):
    with open(os.path.join(_ctx.work_dir, "notes-calls.jsonl"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"kind": kind, **fields}, default=str) + "\n")


def _notes():
    return _ctx.state.get("notes", [])


def write_note(args, task_id=None, session_id=None, tool_call_id=None):
    notes = _notes() + [args["text"]]
    _ctx.state.set("notes", notes)
    _ctx.emit("written", {"text": args["text"], "count": len(notes)})
    _record("write_note", args=args, task_id=task_id, session_id=session_id, tool_call_id=tool_call_id)
    return json.dumps({"ok": True, "count": len(notes)})


def read_notes(args, **kw):
    _record("read_notes", args=args, kw=sorted(kw))
    return json.dumps({"notes": _notes(), "prefix": _ctx.get_config("prefix")})


def cloud_sync(args):
    return "never offered: NOTES_CLOUD_KEY is not set"


def stamp(tool_name, result):
    if tool_name == "read_notes":
        return result + " [checked by hermes-notes]"
    return None


def sign(response_text):
    return response_text + " -- notes"


def notes_command(raw_args, session_id=None):
    listing = _ctx.dispatch_tool("read_notes", {"filter": raw_args})
    summary = _ctx.llm.complete([{"role": "user", "content": "summarize my notes: " + listing}])
    _record("command", raw_args=raw_args, session_id=session_id, llm_text=summary.text, llm_provider=summary.provider)
    return "notes: %s | model: %s" % (listing, summary.text)


def remind(raw_args):
    # No session key given: the conversation the command runs in (HERMES_SESSION_KEY).
    ok = _ctx.inject_message("remember: " + raw_args, role="system")
    return "injected=%s has_self=%s has_ghost=%s" % (ok, _ctx.has_plugin("hermes-notes"), _ctx.has_plugin("ghost"))


def setup(parser):
    sub = parser.add_subparsers(dest="action")
    add = sub.add_parser("add", help="add a note")
    add.add_argument("text")
    add.add_argument("--tag", default="misc")
    sub.add_parser("list", help="list notes")
    sub.add_parser("fail", help="exit with code 3")


def run(args):
    if args.action == "add":
        notes = _notes() + [args.text]
        _ctx.state.set("notes", notes)
        _ctx.set_config("last_tag", args.tag)
        print("added %r (tag %s); %d notes" % (args.text, args.tag, len(notes)))
        return 0
    if args.action == "list":
        for n in _notes():
            print("-", n)
        return 0
    if args.action == "fail":
        print("this command fails on purpose", flush=True)
        import sys
        print("failing", file=sys.stderr)
        return 3
    print("nothing to do")
    return 1


def count_section(session_info):
    return "There are %d notes; this session is %s." % (len(_notes()), session_info["session_id"])


def add_marker(request, **kw):
    msgs = list(request["messages"]) + [{"role": "system", "content": "[[context]] notes middleware ran"}]
    return {"request": dict(request, messages=msgs)}


def on_written(text, count):
    _record("event", text=text, count=count)


class _ImageGen:
    name = "fake-images"


def register(ctx):
    global _ctx
    _ctx = ctx
    params = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    ctx.register_tool(name="write_note", toolset="notes",
                      schema={"name": "write_note", "description": "Write a note", "parameters": params},
                      handler=write_note, description="Write a note", emoji="N")
    ctx.register_tool(name="read_notes", toolset="notes",
                      schema={"name": "read_notes", "description": "Read the notes",
                              "parameters": {"type": "object", "properties": {"filter": {"type": "string"}}}},
                      handler=read_notes, check_fn=lambda: True)
    ctx.register_tool(name="cloud_sync", toolset="notes", schema={"name": "cloud_sync", "parameters": params},
                      handler=cloud_sync, requires_env=["NOTES_CLOUD_KEY"])
    ctx.register_tool(name="echo", toolset="notes", schema={"name": "echo", "parameters": params},
                      handler=cloud_sync)  # shadows a built-in without override=True: not registered
    ctx.register_hook("transform_tool_result", stamp)
    ctx.register_hook("transform_llm_output", sign)
    ctx.register_command("notes", handler=notes_command, description="list the notes", args_hint="[filter]")
    ctx.register_command("remind", handler=remind, description="queue a reminder into this conversation", args_hint="<text>")
    ctx.register_cli_command(name="notes", help="manage notes", setup_fn=setup, handler_fn=run,
                             description="Notes from the command line")
    ctx.register_system_prompt_section("notes.guide", "Notes are short and dated.")
    ctx.register_system_prompt_section("notes.count", count_section)
    ctx.register_middleware("llm_request", add_marker)
    ctx.register_middleware("llm_execution", lambda request, next_call, **kw: next_call(request))
    ctx.register_image_gen_provider(_ImageGen())
    ctx.register_skill("note-taking", Path(__file__).parent / "README.md")
    ctx.subscribe("hermes-notes:written", on_written)
    ctx.on_unload(lambda: _record("unload"))
