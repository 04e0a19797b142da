#!/usr/bin/env bash
# The first failure is the odd one out: the job's very first run fails with a KeyError, every
# later run with the failure that matters (a ValueError on sample 5). The reduction must notice
# that the measuring runs are dominated by the other failure and reduce that one to sample 5,
# not chase a failure that never comes back. (No torch: plain Python ranks, a few seconds.)
# usage: reduce_retarget.sh DDPBISECT
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
bin=$1
tmp=$(mktemp -d)
at_exit rm -rf "$tmp"
mkdir -p "$tmp/work"
cat >"$tmp/work/job.py" <<'EOF'
import os, sys
counter = os.environ["RETARGET_COUNTER"]  # outside the cwd: trials do not isolate it
n = int(open(counter).read()) if os.path.exists(counter) else 0
open(counter, "w").write(str(n + 1))
samples = set()
for part in sys.argv[1].split(","):
    if part:
        lo, _, hi = part.partition("-")
        samples.update(range(int(lo), int(hi or lo) + 1))
if n == 0:
    raise KeyError("only the very first run fails this way")
if 5 in samples:
    raise ValueError("sample 5 is malformed")
EOF
cat >"$tmp/spec.yaml" <<EOF
workload:
  command: [python3, job.py, "{samples}"]
  cwd: $tmp/work
  env: {RETARGET_COUNTER: $tmp/counter}
  samples: 16
stages: [{name: single, nodes: 1, procs_per_node: 1}]
limits: {trial_timeout: 30s}
EOF
"$bin" "$tmp/spec.yaml" --out "$tmp/out" >"$tmp/log" 2>&1
rc=$?
[[ $rc -eq 0 ]] && ok || bad "exit $rc: $(tail -5 "$tmp/log")"
got=$(py "import json; r=json.load(open('$tmp/out/report.json')); print(r['signature']['exception'], r['minimal']['sample_indices'])" 2>&1)
[[ $got == "ValueError 5" ]] && ok || bad "target and minimum: got '$got', want 'ValueError 5'"
grep -q "another one 9 of 10 times: reducing that one" "$tmp/log" && ok || bad "no note about the new target: $(grep -i flaky "$tmp/log")"
finish reduce_retarget
