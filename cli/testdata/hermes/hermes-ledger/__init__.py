"""A ledger in the shape public plugins have: its data where
plugins.plugin_storage puts it (a SQLite database from plugin_db, a text
file in plugin_data_dir), its settings read with
hermes_cli.config.load_config_readonly, the profile named by
hermes_constants.profile_name_for_home, its answers built with
tools.registry, one tool registered through tools.registry at import.
ledger_facts writes what the host modules answered to facts.json."""

import importlib
import json
import sqlite3

from hermes_cli.config import load_config_readonly
from hermes_constants import (get_default_hermes_root, get_hermes_home, get_hermes_home_override,
                              get_process_hermes_home, profile_name_for_home)
from plugins.plugin_storage import plugin_data_dir, plugin_db
from tools.registry import registry, tool_error, tool_result

NAME = "hermes-ledger"


def _db():
    db = plugin_db(NAME)
    db.execute("CREATE TABLE IF NOT EXISTS accounts (name TEXT PRIMARY KEY)")
    db.execute("CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, item TEXT NOT NULL, amount INTEGER NOT NULL,"
               " account TEXT NOT NULL REFERENCES accounts(name))")
    db.execute("INSERT OR IGNORE INTO accounts VALUES ('household')")
    db.commit()
    return db


def _currency():
    return load_config_readonly().get("plugins", {}).get(NAME, {}).get("currency", "EUR")


def _add(args, **kwargs):
    item, amount, account = args.get("item"), args.get("amount"), args.get("account", "household")
    if not item or not isinstance(amount, int):
        return tool_error("item and a whole amount are needed", code="bad_args")
    db = _db()
    try:
        with db:
            db.execute("INSERT INTO entries (item, amount, account) VALUES (?, ?, ?)", (item, amount, account))
    except sqlite3.IntegrityError:
        return tool_error("no account " + account, code="foreign_key")
    finally:
        db.close()
    with open(plugin_data_dir(NAME) / "ledger.txt", "a", encoding="utf-8") as f:
        f.write("%s %d %s\n" % (item, amount, _currency()))
    return tool_result(added=item, amount=amount)


def _total(args, **kwargs):
    db = _db()
    total = db.execute("SELECT COALESCE(SUM(amount), 0) FROM entries").fetchone()[0]
    db.close()
    return tool_result({"total": total, "currency": _currency()})


def _error(fn, *args):
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001 - what went wrong is the fact
        return "%s: %s" % (type(exc).__name__, exc)
    return None


def _facts(ctx):
    cfg = load_config_readonly()
    cfg["plugins"] = "changed by the caller"
    db = _db()
    root = get_default_hermes_root()
    facts = {
        "data_dir": str(plugin_data_dir(NAME)),
        "is_work_dir": plugin_data_dir(NAME) == plugin_data_dir(ctx.plugin_id) and str(plugin_data_dir(NAME)) == ctx.work_dir,
        "other_dir": str(plugin_data_dir("other.plugin_2")),
        "bad_names": [_error(plugin_data_dir, n) for n in ("../escape", "a/b", "", ".hidden", "x" * 65)],
        "bad_file": _error(plugin_db, NAME, "sub/data.db"),
        "journal_mode": db.execute("PRAGMA journal_mode").fetchone()[0],
        "foreign_keys": db.execute("PRAGMA foreign_keys").fetchone()[0],
        "home": str(get_hermes_home()),
        "process_home": str(get_process_hermes_home()),
        "override": get_hermes_home_override(),
        "root": str(root),
        "profile_of_home": profile_name_for_home(get_hermes_home()),
        "profile_of_root": profile_name_for_home(str(root)),
        "profile_of_named": profile_name_for_home(root / "profiles" / "travel"),
        "profile_of_data": profile_name_for_home(plugin_data_dir(NAME)),
        "profile_of_elsewhere": profile_name_for_home("/"),
        "profile_of_empty": profile_name_for_home(""),
        "currency": _currency(),
        "plugins_memory": _error(importlib.import_module, "plugins.memory"),
        "tool_error": json.loads(tool_error("x" * 3000, code=7))["error"][-20:],
    }
    db.close()
    with open(plugin_data_dir(NAME) / "facts.json", "w", encoding="utf-8") as f:
        json.dump(facts, f, sort_keys=True)
    return tool_result(written="facts.json")


registry.register(name="ledger_total", toolset="ledger", handler=_total,
                  schema={"name": "ledger_total", "description": "The ledger's total.",
                          "parameters": {"type": "object", "properties": {}}})


def register(ctx):
    ctx.register_tool(name="ledger_add", toolset="ledger", handler=_add,
                      schema={"name": "ledger_add", "description": "Add an entry to the ledger.",
                              "parameters": {"type": "object", "properties": {
                                  "item": {"type": "string"}, "amount": {"type": "integer"},
                                  "account": {"type": "string"}}, "required": ["item", "amount"]}})
    ctx.register_tool(name="ledger_facts", toolset="ledger", handler=lambda args, **kw: _facts(ctx),
                      schema={"name": "ledger_facts", "description": "Write what the host modules answered.",
                              "parameters": {"type": "object", "properties": {}}})
