#!/usr/bin/env bash
# A launcher that dies by itself before any rank runs (as Debian's torchrun does on Python 3.11:
# a traceback in its own first lines) is not a failure of the job: `run` judges the trial infra
# (exit 125) and says the job never started; a reduction stops after the first configuration's
# three tries (exit 3, report.json's not_started) instead of reducing the launcher's traceback
# to "1 rank". The same launcher that does start its rank is judged by that rank: a pass.
# Usage: launcher_broken.sh DDPBISECT
set -u
source "$(dirname "$0")/lib.sh"
bin=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
[[ -n ${KEEP:-} ]] || at_exit rm -rf "$tmp"
json() { py "import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }

# A `torchrun` that fails in its own start-up unless TORCHRUN_WORKS is set; then it runs its
# script once, as the single rank it was asked for (LOCAL_RANK 0), the way torchrun would.
mkdir "$tmp/bin"
cat >"$tmp/bin/torchrun" <<'EOS'
#!/usr/bin/env python3
import os, subprocess, sys
def entry_points():
    return None
if not os.environ.get("TORCHRUN_WORKS"):
    group = entry_points().get("console_scripts")
args = sys.argv[1:]
while args and args[0].startswith("--"):
    args.pop(0)
env = dict(os.environ, RANK="0", LOCAL_RANK="0", WORLD_SIZE="1")
sys.exit(subprocess.call([sys.executable] + args, env=env))
EOS
chmod +x "$tmp/bin/torchrun"
cat >"$tmp/train.py" <<'EOS'
import sys
print("training", sys.argv[1:], flush=True)
EOS
cat >"$tmp/spec.yaml" <<EOS
workload:
  command: [$tmp/bin/torchrun, --nproc-per-node=2, $tmp/train.py, --steps, "2"]
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: node, nodes: 1, procs_per_node: 2}
limits: {trial_timeout: 60s}
EOS

# 1. One trial: infra, with the launcher's own error as the reason.
"$bin" run "$tmp/spec.yaml" --out "$tmp/run" --json >"$tmp/run.json" 2>"$tmp/run.err"
rc=$?
[[ $rc == 125 ]] && ok || bad "run of a job whose launcher dies at start exited $rc, not 125 (skip)"
reason=$(json "$tmp/run.json" "o['reason']")
[[ $reason == "the job never started: the launcher on node 0 failed before any rank ran: AttributeError"* ]] &&
  ok || bad "run's reason: $reason"
[[ $(json "$tmp/run.json" "o['not_started']") == True ]] && ok || bad "outcome.json lacks not_started"

# 2. A reduction: the climb stops at its first configuration; nothing is reduced.
"$bin" "$tmp/spec.yaml" --out "$tmp/red" --quiet >"$tmp/red.out" 2>"$tmp/red.err"
rc=$?
[[ $rc == 3 ]] && ok || { bad "the reduction exited $rc, not 3"; tail -5 "$tmp/red.err" >&2; }
grep -q "^ddpbisect: the job never started: the launcher on node 0 failed before any rank ran" "$tmp/red.out" &&
  ok || bad "the reduction's last line does not say the job never started: $(cat "$tmp/red.out")"
trials=$(ls "$tmp/red/trials" | wc -l)
[[ $trials == 3 ]] && ok || { bad "the reduction ran $trials trials, not 3 (one configuration's tries)"; trial_story "$tmp/red"; }
py '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "not_reproduced", r["status"]
assert r["minimal"] is None, r["minimal"]
assert r["not_started"].startswith("the job never started: the launcher on node 0"), r["not_started"]
' "$tmp/red/report.json" && ok || bad "report.json does not say the job never started"
grep -q "never started" "$tmp/red/report.md" && ok || bad "report.md does not say the job never started"

# 3. The same launcher that starts its rank: the trial is judged by the rank, which passes.
TORCHRUN_WORKS=1 "$bin" run "$tmp/spec.yaml" --stage single --out "$tmp/works" --json >"$tmp/works.json" 2>"$tmp/works.err"
rc=$?
[[ $rc == 0 ]] && ok || bad "run with a working launcher exited $rc: $(json "$tmp/works.json" "o['reason']")"
[[ $(json "$tmp/works.json" "o.get('not_started', False)") == False ]] && ok ||
  bad "a trial whose rank ran says not_started"
[[ $(pgrep -f -- "$tmp/" | wc -l) == 0 ]] && ok || bad "processes left: $(pgrep -af -- "$tmp/")"
finish launcher_broken
