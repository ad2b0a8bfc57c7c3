#!/usr/bin/env bash
# Whole-process figures for `atrium sessions import hermes` (docs/benchmarks.md, "Importing from
# other agents"): a store of N sessions x M messages in the familiar agent's schema is written by
# Python's sqlite3 (the baseline: what writing that history cost in the store it comes from, in one
# transaction, with its full-text trigger), then imported into a fresh Atrium home, then imported
# again (nothing new). REPS interleaved repetitions; medians and min-max are printed.
#
#   scripts/bench-import.sh [ATRIUM_BIN] [N] [M] [REPS]
set -euo pipefail
bin=${1:-build/bin/atrium}
n=${2:-10000}
m=${3:-20}
reps=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
declare -a gen imp again
for ((i = 0; i < reps; i++)); do
	t0=$(now)
	python3 "$here/bench-import-store.py" "$work/state.db" "$n" "$m" >/dev/null
	t1=$(now)
	rm -rf "$work/home"
	"$bin" --home "$work/home" sessions import hermes "$work/state.db" >/dev/null
	t2=$(now)
	"$bin" --home "$work/home" sessions import hermes "$work/state.db" >/dev/null
	t3=$(now)
	gen+=("$(echo "$t1 - $t0" | bc)")
	imp+=("$(echo "$t2 - $t1" | bc)")
	again+=("$(echo "$t3 - $t2" | bc)")
done
stats() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "%.2f s (%.2f-%.2f)", a[int((NR+1)/2)], a[1], a[NR]}'; }
med() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "N=$n M=$m reps=$reps load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "python store, write the history (baseline): $(stats "${gen[@]}")"
echo "atrium sessions import hermes:              $(stats "${imp[@]}")  ratio $(echo "scale=2; $(med "${imp[@]}") / $(med "${gen[@]}")" | bc)"
echo "the same import again (nothing new):        $(stats "${again[@]}")"
echo "atrium store: $(du -k "$work/home/state.db" | cut -f1) KiB; the familiar agent's: $(du -k "$work/state.db" | cut -f1) KiB"
