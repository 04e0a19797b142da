#!/usr/bin/env bash
# Runs the README's test command with busy processes beside it (issue #25): a loaded machine is
# what --jobs N, DataLoader workers and shared boxes are; the suite must pass there too.
# usage: scripts/stress-tests.sh [--hogs N] [ctest arguments...]   (default 2 hogs)
set -euo pipefail
cd "$(dirname "$0")/.."
hogs=2
if [[ ${1:-} == --hogs ]]; then
  hogs=$2
  shift 2
fi
pids=()
stop() { ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null || true; }
trap stop EXIT
for ((i = 0; i < hogs; i++)); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done
echo "stress-tests: $hogs busy processes beside the suite (pids ${pids[*]})" >&2
start=$(date +%s)
status=0
bash scripts/setup.sh && cmake --preset default && cmake --build --preset default -j2 &&
  ctest --preset default "$@" || status=$?
echo "stress-tests: exit $status after $(($(date +%s) - start)) s with $hogs hogs" >&2
exit $status
