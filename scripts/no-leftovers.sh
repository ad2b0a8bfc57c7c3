#!/usr/bin/env bash
# scripts/no-leftovers.sh DIR...: fail loudly if a process whose command line
# names one of DIR (a test binary or a test home under CI's TMPDIR, the built
# binary) is still alive: an Atrium process, a background plugin host or a
# plugin it started. A lingering host would otherwise hold CI's output open.
# Each one is listed, then killed so CI ends.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
find_left() {
  ps -eww -o pid=,stat=,args= | awk -v self=$$ -v dirs="$*" '
    BEGIN { n = split(dirs, d, " ") }
    $1 == self || $2 ~ /^Z/ || /no-leftovers\.sh/ || /ps -eww/ { next }
    { for (i = 1; i <= n; i++) if (index($0, d[i]) > 0) { print; next } }'
}
# A host that was just told to stop finishes its deliveries first.
for _ in $(seq 50); do
  left=$(find_left "$@")
  [ -z "$left" ] && exit 0
  sleep 0.2
done
echo "FAIL: processes left behind by the tests (an Atrium process, a plugin host or a plugin):" >&2
echo "$left" >&2
echo "$left" | awk '{print $1}' | xargs -r kill -9 2>/dev/null
exit 1
