#!/usr/bin/env python3
"""Whole-process benchmarks of the profile's plugin host (docs/benchmarks.md).

    scripts/bench-host.py build/bin/atrium [--runs 41] [--events 200]   (the command-line binary)

1. A terminal `atrium sessions delete` of one session with the bundled
   Python plugin (session-index) enabled: with a warm plugin host versus
   `plugins.host: inline` (the command starts the plugin itself). Two homes
   seeded alike; the runs alternate between them so both see the same noise.
   Each delete waits for its delivery, as by default.
2. Commit-to-callback latency of an event committed by another process: a
   small Python plugin in the warm host writes the time it received each
   event; the latency is that time minus the event's created_at (stamped
   when the committing transaction began, in milliseconds, so it slightly
   overstates). Once with events committed by `atrium sessions end
   --no-wait` (which pokes the host), once by a process that does not poke
   (a bare sqlite3 insert: the host notices it through PRAGMA data_version).

Prints medians with min-max and percentiles; exits non-zero on a failure.
"""

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

LATENCY_PLUGIN = """
import json, os, time

def register(ctx):
    path = os.path.join(ctx.work_dir, "received.jsonl")
    def on_finalize(event_id, **kwargs):
        now = time.time()
        with open(path, "a") as f:
            f.write(json.dumps({"event_id": event_id, "t": now}) + "\\n")
    ctx.register_hook("on_session_finalize", on_finalize)
"""


def run(binary, home, *args, check=True):
    p = subprocess.run([binary, "--home", home, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"atrium {' '.join(args)} failed ({p.returncode}): {p.stderr}")
    return p


def seed(binary, home, n):
    run(binary, home, "dev", "seed", "--sessions", str(n), "--messages", "2")
    out = run(binary, home, "--json", "sessions", "list", "--limit", str(n)).stdout
    return [s["id"] for s in json.loads(out)["sessions"]]


def timed(binary, home, *args):
    t0 = time.perf_counter()
    run(binary, home, *args)
    return (time.perf_counter() - t0) * 1000


def summary(ms):
    ms = sorted(ms)
    return f"median {statistics.median(ms):.1f} ms (min {ms[0]:.1f}, max {ms[-1]:.1f}, n={len(ms)})"


def pct(ms, p):
    ms = sorted(ms)
    return ms[min(len(ms) - 1, int(round(p / 100 * (len(ms) - 1))))]


def bench_delete(binary, root, runs):
    warm, inline = os.path.join(root, "warm"), os.path.join(root, "inline")
    for h in (warm, inline):
        os.makedirs(h)
    with open(os.path.join(inline, "config.yaml"), "w") as f:
        f.write("plugins:\n  host: inline\n")
    ids = {h: seed(binary, h, runs + 3) for h in (warm, inline)}
    # Warm-up: the first delete of the warm home starts its host; one each
    # also writes the bundled plugins out and learns session-index's handshake.
    for h in (warm, inline):
        for _ in range(2):
            run(binary, h, "sessions", "delete", ids[h].pop())
    status = json.loads(run(binary, warm, "--json", "plugins", "host").stdout)
    assert status["running"], status
    times = {warm: [], inline: [], "start": []}
    for i in range(runs):
        order = (warm, inline) if i % 2 == 0 else (inline, warm)
        for h in order:
            times[h].append(timed(binary, h, "sessions", "delete", ids[h].pop()))
        times["start"].append(timed(binary, warm, "version"))  # the process's own start, for scale
    # Every delete reached session-index, in the host or in the command.
    for h in (warm, inline):
        evs = json.loads(run(binary, h, "--json", "events", "list", "--hook", "on_session_delete", "--limit", "100000").stdout)
        bad = [e for e in evs if not any(d["subscriber"] == "session-index" and d["status"] == "ok" for d in e["deliveries"])]
        assert not bad, f"{h}: {len(bad)} deletes not delivered to session-index"
    run(binary, warm, "plugins", "host", "stop")
    w, n = statistics.median(times[warm]), statistics.median(times[inline])
    print("sessions delete, one session, bundled Python plugin enabled:")
    print(f"  warm host: {summary(times[warm])}")
    print(f"  inline:    {summary(times[inline])}")
    print(f"  inline / warm host: {n / w:.1f}x")
    print(f"  for scale, `atrium version` (the process starting and exiting): {summary(times['start'])}")


def bench_latency(binary, root, events):
    home = os.path.join(root, "latency")
    src = os.path.join(root, "latency-plugin")
    os.makedirs(home)
    os.makedirs(src)
    with open(os.path.join(src, "plugin.yaml"), "w") as f:
        f.write("name: latency\nruntime: python\nversion: 0.0.1\nhooks: [on_session_finalize]\n")
    with open(os.path.join(src, "__init__.py"), "w") as f:
        f.write(LATENCY_PLUGIN)
    run(binary, home, "plugins", "install", src)
    run(binary, home, "plugins", "enable", "latency")
    ids = seed(binary, home, events + 2)
    run(binary, home, "sessions", "end", ids.pop())  # starts the host, warms the plugin
    received = os.path.join(home, "plugins-data", "latency", "received.jsonl")

    def latencies(expect):
        deadline = time.time() + 60
        while time.time() < deadline:
            got = {}
            if os.path.exists(received):
                for line in open(received):
                    x = json.loads(line)
                    got.setdefault(x["event_id"], x["t"])
            if expect <= set(got):
                break
            time.sleep(0.05)
        evs = json.loads(run(binary, home, "--json", "events", "list", "--hook", "on_session_finalize", "--limit", "100000").stdout)
        created = {e["event_id"]: e["created_at"] for e in evs}
        out = []
        for eid in expect:
            if eid not in got:
                sys.exit(f"event {eid} never reached the plugin")
            c = created[eid].replace("Z", "+00:00")
            from datetime import datetime
            out.append((got[eid] - datetime.fromisoformat(c).timestamp()) * 1000)
        return out

    def known():
        evs = json.loads(run(binary, home, "--json", "events", "list", "--hook", "on_session_finalize", "--limit", "100000").stdout)
        return {e["event_id"] for e in evs}

    before = known()
    half = events // 2
    for _ in range(half):
        run(binary, home, "sessions", "end", ids.pop(), "--no-wait")
        time.sleep(random.uniform(0, 0.05))
    poked = latencies(known() - before)

    # A process that does not poke: a bare insert, as another tool could.
    before = known()
    db = sqlite3.connect(os.path.join(home, "state.db"), timeout=10)
    for _ in range(half):
        with db:
            db.execute("INSERT INTO hook_events (event_id, hook, payload, created_at) VALUES (?, ?, ?, ?)",
                       (str(uuid.uuid4()), "on_session_finalize", json.dumps({"session_id": "raw", "reason": "bench"}),
                        int(time.time() * 1000)))
        time.sleep(random.uniform(0, 0.05))
    db.close()
    unpoked = latencies(known() - before)
    run(binary, home, "plugins", "host", "stop")
    print("commit-to-callback latency, events committed by another process:")
    for name, ms in (("poked (atrium sessions end --no-wait)", poked), ("not poked (bare insert; data_version)", unpoked)):
        print(f"  {name}: p50 {pct(ms, 50):.1f} ms, p99 {pct(ms, 99):.1f} ms, min {min(ms):.1f}, max {max(ms):.1f} (n={len(ms)})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--runs", type=int, default=41)
    ap.add_argument("--events", type=int, default=200)
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    root = tempfile.mkdtemp(prefix="atrium-bench-host-")
    try:
        print(f"machine load before: {os.getloadavg()[0]:.2f} (1-min)")
        bench_delete(binary, root, a.runs)
        bench_latency(binary, root, a.events)
        print(f"machine load after: {os.getloadavg()[0]:.2f} (1-min)")
    finally:
        for h in ("warm", "inline", "latency"):
            p = os.path.join(root, h)
            if os.path.isdir(p):
                subprocess.run([binary, "--home", p, "plugins", "host", "stop"], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
