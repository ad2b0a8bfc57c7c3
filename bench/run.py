#!/usr/bin/env python3
"""Run the shared session-store workload through every implementation, interleaved
(A, B, C, D, E, A, B, ...), and print side-by-side medians (min-max) and ratios.

    python3 bench/run.py --peer-dir DIR --storebench BIN --rawbench BIN [--n 10000] [--m 20] [--reps 3]

Implementations (columns):
  peer-full    the Python store (bench/peer_sessiondb.py over DIR/hermes_state.py), SQLite's default synchronous=FULL
  peer-normal  the same at synchronous=NORMAL (Atrium's durability)
  raw          the raw-SQLite floor (bench/rawsqlite, -impl raw -mode perop -sync NORMAL -fts=true)
  atrium       Atrium through its services (cmd/storebench), sessions.trash_days 0: deletes remove rows at once
  atrium-trash the same with trash_days 30: user deletes, the prune and the sweep move rows to the trash
  atrium-before (with --before BIN) a storebench built from an older commit, trash off

Every JSON line is appended to --out (default build/bench/peer-TIMESTAMP.jsonl) with the load
average before and after it, so a noisy run can be told from a quiet one.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# (key, unit, label, target as text, target check on the Atrium median or None)
ROWS = [
    ("insert_us_per_msg", "us", "append one message, own transaction", "<= 0.5x peer-normal", None),
    ("insert_indexed_us_per_msg", "us", "  ... until the search index caught up", "", None),
    ("list_page_us", "us", "list page of 50, newest first", "<= 70 us", 70),
    ("list_source_us", "us", "list page of 50 by source", "", None),
    ("get_messages_us", "us", "read a transcript (20 messages)", "<= 30 us", 30),
    ("count_us", "us", "count", "<= 10 us", 10),
    ("end_session_us", "us", "end a session", "<= 20 us", 20),
    ("end_session_at_rest_us", "us", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("fts_search_us", "us", "FTS search", "<= 300 us", 300),
    ("bulk_delete_ms", "ms", "bulk delete 1,000 (peer: 1,000 calls)", "<= 200 ms", 200),
    ("bulk_delete_indexed_ms", "ms", "  ... until the search index caught up", "", None),
    ("bulk_delete_at_rest_ms", "ms", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("delete_each_ms", "ms", "delete 1,000 one by one", "<= 250 ms", 250),
    ("delete_each_indexed_ms", "ms", "  ... until the search index caught up", "", None),
    ("delete_each_at_rest_ms", "ms", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("bulk_archive_ms", "ms", "bulk archive 1,000", "<= 20 ms", 20),
    ("bulk_archive_at_rest_ms", "ms", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("prune_ms", "ms", "retention prune (30% of N)", "<= 300 ms", 300),
    ("prune_indexed_ms", "ms", "  ... until the search index caught up", "", None),
    ("prune_at_rest_ms", "ms", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("delete_tree_ms", "ms", "delete a tree of five", "<= 1.5 ms", 1.5),
    ("delete_tree_at_rest_ms", "ms", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("empty_sweep_ms", "ms", "empty-session sweep", "", None),
    ("empty_sweep_at_rest_ms", "ms", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("empty_trash_ms", "ms", "empty the trash (purge for good)", "", None),
    ("empty_trash_indexed_ms", "ms", "  ... until the search index caught up", "", None),
    ("empty_trash_at_rest_ms", "ms", "  ... until at rest (index caught up, WAL in the file)", "", None),
    ("bytes_per_msg", "B", "bytes on disk per message after the load", "", None),
    ("db_bytes_end", "MB", "file after the deletes", "", None),
    ("db_bytes_after_vacuum", "MB", "file after maintenance (index merge, incremental vacuum)", "", None),
    ("db_bytes_after_full_vacuum", "MB", "file after a full VACUUM", "", None),
]


def loadavg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run(cmd, env=None):
    t = time.time()
    la0 = loadavg()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"failed: {' '.join(cmd)}")
    line = p.stdout.strip().splitlines()[-1]
    res = json.loads(line)
    res["_wall_s"] = time.time() - t
    res["_load_before"], res["_load_after"] = la0, loadavg()
    if res.get("db_bytes_after_insert") and res.get("insert_msgs"):
        res["bytes_per_msg"] = res["db_bytes_after_insert"] / res["insert_msgs"]
    for k in ("db_bytes_end", "db_bytes_after_vacuum", "db_bytes_after_full_vacuum"):
        if res.get(k):
            res[k] = res[k] / 1e6
    return res


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "us" or unit == "B":
        return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"
    if unit == "MB":
        return f"{v:.1f}"
    return f"{v:,.0f}" if v >= 100 else f"{v:.2f}" if v < 10 else f"{v:.1f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer-dir", required=True, help="folder holding hermes_state.py (bench/README.md)")
    ap.add_argument("--storebench", required=True)
    ap.add_argument("--rawbench", required=True)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dir", default=None, help="where the temporary stores go")
    ap.add_argument("--impls", default="peer-full,peer-normal,raw,atrium,atrium-trash")
    ap.add_argument("--before", default=None, help="a storebench built from an older commit: adds the column atrium-before "
                    "(trash off), for before/after ratios measured in the same run")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()

    if not os.path.isfile(os.path.join(a.peer_dir, "hermes_state.py")):
        raise SystemExit(f"{a.peer_dir}/hermes_state.py is missing: fetch it as bench/README.md says")
    common = ["--n", str(a.n), "--m", str(a.m)]
    gocommon = ["-n", str(a.n), "-m", str(a.m)]
    if a.dir:
        common += ["--dir", a.dir]
        gocommon += ["-dir", a.dir]
    peer = [sys.executable, os.path.join(HERE, "peer_sessiondb.py"), a.peer_dir] + common
    cmds = {
        "peer-full": peer,
        "peer-normal": peer + ["--sync", "NORMAL"],
        "raw": [a.rawbench, "-impl", "raw", "-mode", "perop", "-sync", "NORMAL", "-fts=true"] + gocommon,
        "atrium": [a.storebench, "-trash-days", "0"] + gocommon,
        "atrium-trash": [a.storebench, "-trash-days", "30"] + gocommon,
    }
    if a.before:
        cmds["atrium-before"] = [a.before, "-trash-days", "0"] + gocommon
    impls = a.impls.split(",")
    if a.before and "atrium-before" not in impls:
        impls.insert(impls.index("atrium") if "atrium" in impls else len(impls), "atrium-before")
    for i in impls:
        if i not in cmds:
            raise SystemExit(f"unknown implementation {i} (one of {', '.join(cmds)})")
    out = a.out or os.path.join("build", "bench", time.strftime("peer-%Y%m%d-%H%M%S.jsonl"))
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    results = {i: [] for i in impls}
    with open(out, "a") as f:
        for rep in range(a.reps):
            for i in impls:
                r = run(cmds[i])
                r["_impl"], r["_rep"] = i, rep
                results[i].append(r)
                f.write(json.dumps(r) + "\n")
                f.flush()
                print(f"rep {rep + 1}/{a.reps} {i}: {r['_wall_s']:.0f} s, load {r['_load_before']:.1f} -> {r['_load_after']:.1f}",
                      file=sys.stderr)

    def stats(i, key):
        vs = [r.get(key) for r in results[i]]
        vs = [v for v in vs if isinstance(v, (int, float))]
        if not vs:
            return None
        return statistics.median(vs), min(vs), max(vs)

    print(f"N={a.n} x M={a.m}, {a.reps} interleaved repetitions; median (min-max); raw lines in {out}")
    extra = " atrium/atrium-before |" if "atrium-before" in impls else ""
    head = f"| operation | " + " | ".join(impls) + " | atrium/peer-normal | atrium/raw |" + extra + " target | met |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for key, unit, label, target, limit in ROWS:
        cells, med = [], {}
        for i in impls:
            s = stats(i, key)
            if s is None:
                cells.append("-")
                continue
            med[i] = s[0]
            cells.append(f"{fmt(s[0], unit)} ({fmt(s[1], unit)}-{fmt(s[2], unit)})")
        if all(c == "-" for c in cells):
            continue
        ratio = lambda x, y: f"{med[x] / med[y]:.2f}" if x in med and y in med and med[y] else "-"
        met = ""
        if "atrium" in med:
            if key == "insert_us_per_msg" and "peer-normal" in med:
                met = "yes" if med["atrium"] <= 0.5 * med["peer-normal"] else "no"
            elif limit is not None:
                met = "yes" if med["atrium"] <= limit else "no"
        before = f" {ratio('atrium', 'atrium-before')} |" if extra else ""
        print(f"| {label} ({unit}) | " + " | ".join(cells) + f" | {ratio('atrium', 'peer-normal')} | {ratio('atrium', 'raw')} |{before} {target} | {met} |")


if __name__ == "__main__":
    main()
