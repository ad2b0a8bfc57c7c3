#!/usr/bin/env python3
"""Writes a store in the familiar Python agent's state.db schema (its version 4) with N sessions x M
messages, in one transaction, the way its store lays them out: tool calls as an OpenAI JSON list on
the assistant row, tool results as rows of their own, compression splits ended with "compression"
and continued in a child, chat-platform sessions with a user id. Used by scripts/bench-import.sh.

    python3 scripts/bench-import-store.py PATH N M
"""
import json, sqlite3, sys, time, os
path, n, m = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if os.path.exists(path): os.remove(path)
c = sqlite3.connect(path)
c.execute("PRAGMA journal_mode=WAL")
c.executescript("""
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, model_config TEXT, system_prompt TEXT,
 parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
 tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0, title TEXT,
 FOREIGN KEY (parent_session_id) REFERENCES sessions(id));
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
 content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id);
CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content); END;
INSERT INTO schema_version VALUES (4);
""")
t0 = time.time() - 200 * 86400
words = "the quick brown fox jumps over lazy dog session agent tool call result memory context".split()
srcs = ["cli", "cli", "cli", "telegram", "discord", "cron"]
for i in range(n):
    sid = "2026%04d_%06d_%06x" % (i // 1000, i % 1000000, i)
    parent = None; reason = "user_exit"
    if i % 10 == 1: parent = "2026%04d_%06d_%06x" % ((i-1) // 1000, (i-1) % 1000000, i-1)
    st = t0 + i * 60
    c.execute("INSERT INTO sessions (id, source, user_id, model, parent_session_id, started_at, ended_at, end_reason, title) VALUES (?,?,?,?,?,?,?,?,?)",
              (sid, srcs[i % len(srcs)], "u%d" % (i % 50) if srcs[i % len(srcs)] in ("telegram", "discord") else None, "m", parent, st,
               st + 50 if i % 3 else None, "compression" if i % 10 == 0 else reason if i % 3 else None, ("Session number %d" % i) if i % 4 == 0 else None))
    rows = []
    for j in range(m):
        text = " ".join(words[(i * 7 + j * 3 + k) % len(words)] for k in range(30))
        if j % 5 == 3:
            rows.append((sid, "assistant", "", None, json.dumps([{"id": "call_%d_%d" % (i, j), "type": "function", "function": {"name": "terminal", "arguments": json.dumps({"command": "ls -la"})}}]), None, st + j))
        elif j % 5 == 4:
            rows.append((sid, "tool", "total 0\n" + text, "call_%d_%d" % (i, j - 1), None, "terminal", st + j))
        else:
            rows.append((sid, "user" if j % 2 == 0 else "assistant", text, None, None, None, st + j))
    c.executemany("INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name, timestamp) VALUES (?,?,?,?,?,?,?)", rows)
c.commit()
print(path, n, m)
