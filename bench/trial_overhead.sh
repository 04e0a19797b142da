#!/usr/bin/env bash
# Per-trial driver overhead and hang detection latency.
# 1. A 2-rank trial of a trivial command through `ddpbisect run` vs. the same two processes
#    started by a bare shell script (mean of N runs each, same session). Target <= 30 ms.
# 2. Seconds from a hang's last progress to its declaration, against Gloo's default 1800 s.
# Usage: bench/trial_overhead.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build} n=${2:-30}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/true.yaml" <<EOS
workload: {command: [/bin/true]}
stages: [{name: node, nodes: 1, procs_per_node: 2}]
EOS
ms() { date +%s%3N; }
s=$(ms); for ((i = 0; i < n; i++)); do "$build/ddpbisect" run "$tmp/true.yaml" --out "$tmp/out" >/dev/null; done; e=$(ms)
driver=$(echo "($e - $s) / $n" | bc -l)
s=$(ms); for ((i = 0; i < n; i++)); do bash -c '/bin/true & /bin/true & wait'; done; e=$(ms)
bare=$(echo "($e - $s) / $n" | bc -l)
printf 'per-trial time, 2 ranks of /bin/true, mean of %d:\n' "$n"
printf '  ddpbisect run      %7.1f ms\n' "$driver"
printf '  bare shell script  %7.1f ms\n' "$bare"
printf '  driver overhead    %7.1f ms per trial (target <= 30 ms)\n' "$(echo "$driver - $bare" | bc -l)"

cat >"$tmp/hang.yaml" <<EOS
workload: {command: [python3, $here/../tests/e2e/programs/misbehave.py, hang, bench]}
stages: [{name: node, nodes: 1, procs_per_node: 2}]
EOS
"$build/ddpbisect" run "$tmp/hang.yaml" --out "$tmp/out" --json >"$tmp/hang.json" || true
lag=$(/usr/bin/python3 -c "import json; o=json.load(open('$tmp/hang.json')); print(o['hang_declared_s'] - max(r['last_progress_s'] for r in o['ranks']))")
printf 'hang declared %.2f s after the last progress (threshold auto); Gloo default timeout 1800 s: %.0fx sooner\n' \
  "$lag" "$(echo "1800 / $lag" | bc -l)"
