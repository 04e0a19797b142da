#!/usr/bin/env bash
# Issue #16: repro/run.sh is self-contained. Under `env -i` with only PATH, from another folder, it
# exits 1 when the failure reproduces, 0 when it does not (the bug fixed), 3 when the ranks fail
# differently and 2 when it cannot start; for a command workload (agent and helper module carried
# in repro/python/) and a built-in one (the worker found without DDPBISECT_WORKER).
# usage: repro_exit_codes.sh DDPBISECT SOURCE_DIR
set -u
bin=$1 root=$2
tmp=$(mktemp -d)
trap "rm -rf $tmp" EXIT; [[ -n ${KEEP:-} ]] && trap - EXIT
failures=0
bad() { echo "FAIL: $*"; failures=$((failures + 1)); }
sysbin=/usr/bin:/bin
elsewhere=$tmp/elsewhere
mkdir -p "$elsewhere"

expect_rc() {  # WANT LABEL RUN_SH [VAR=VALUE...]
  local want=$1 label=$2 runsh=$3
  shift 3
  (cd "$elsewhere" && env -i PATH="$PYBIN:$sysbin" "$@" bash "$runsh") >"$tmp/out" 2>&1
  local rc=$?
  if [[ $rc == "$want" ]]; then echo "ok   $label: exit $rc"; else
    bad "$label: run.sh exited $rc, want $want"; tail -5 "$tmp/out"
  fi
}

PYBIN=$(dirname "$(command -v python3)")

# 1. A command workload: a Python rank (no torch, no ddpbisect code) failing on sample 5 of
# samples: auto, as a DataLoader would see it: it imports the helper module only to be sure the
# repro carries it.
mkdir -p "$tmp/cmd/work"
cat >"$tmp/cmd/work/train.py" <<'PY'
import os, sys
import ddpbisect  # the helper module: repro/python must carry it
picked = os.environ.get("DDPBISECT_SAMPLES", "0-9")
bad = os.environ.get("BUG", "ValueError")
open("cache.txt", "w").write(picked)  # a file in the working folder: each trial's own
def indices(text):
    for part in filter(None, text.split(",")):
        a, _, b = part.partition("-")
        yield from range(int(a), int(b or a) + 1)
for i in indices(picked):
    if i == 5 and bad == "ValueError":
        raise ValueError("sample %d is corrupt" % i)
    if i == 5 and bad == "KeyError":
        raise KeyError(i)
PY
cat >"$tmp/cmd/spec.yaml" <<'YAML'
version: 1
name: repro-cmd
workload:
  command: [python3, train.py]
  cwd: work
  samples: 10
stages: [{name: one, nodes: 1, procs_per_node: 1}]
limits: {trial_timeout: 30s}
YAML
"$bin" "$tmp/cmd/spec.yaml" --out "$tmp/cmd/out" --quiet >"$tmp/cmd/log" 2>&1 ||
  { bad "the command reduction failed"; cat "$tmp/cmd/log"; }
runsh=$tmp/cmd/out/repro/run.sh
# Trial isolation: the real folder never got cache.txt; report.md lists it for the minimal trial.
[[ ! -e $tmp/cmd/work/cache.txt ]] || bad "a trial wrote into the real working folder"
grep -q "^- \`$tmp/cmd/work/cache.txt\`" "$tmp/cmd/out/report.md" ||
  bad "report.md does not list the file the minimal trial wrote"
[[ -f $tmp/cmd/out/repro/python/ddpbisect.py && -f $tmp/cmd/out/repro/python/agent/sitecustomize.py ]] ||
  bad "repro/python lacks the helper module or the agent"
expect_rc 1 "command, reproduced" "$runsh"
sed -i 's/raise ValueError/pass  # fixed: ValueError/' "$tmp/cmd/work/train.py"
expect_rc 0 "command, bug fixed" "$runsh"
sed -i 's/pass  # fixed: ValueError.*/raise RuntimeError("another bug")/' "$tmp/cmd/work/train.py"
expect_rc 3 "command, a different failure" "$runsh"
mv "$tmp/cmd/work" "$tmp/cmd/gone"
expect_rc 2 "command, no working folder" "$runsh"

# 2. A built-in workload (the worker): found from another folder with no DDPBISECT_WORKER.
if [[ -x $(dirname "$bin")/ddpbisect-worker ]]; then
  # The worker through a link that goes away: run.sh then finds none.
  ln -s "$(cd "$(dirname "$bin")" && pwd)/ddpbisect-worker" "$tmp/worker"
  DDPBISECT_WORKER=$tmp/worker "$bin" "$root/tests/zoo/worker/rank_raise.yaml" --out "$tmp/bi" \
    --max-trials 6 --quiet >"$tmp/bi.log" 2>&1
  [[ -f $tmp/bi/repro/run.sh ]] || { bad "no built-in repro"; cat "$tmp/bi.log"; }
  expect_rc 1 "built-in, reproduced" "$tmp/bi/repro/run.sh"
  python3 - "$tmp/bi/repro/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["spec"]["workload"]["builtin"]["faults"] = []  # the bug fixed
json.dump(c, open(sys.argv[1], "w"))
PY
  expect_rc 0 "built-in, bug fixed" "$tmp/bi/repro/run.sh"
  rm "$tmp/worker"
  expect_rc 2 "built-in, no worker" "$tmp/bi/repro/run.sh"
fi
[[ $failures -eq 0 ]] && echo "repro exit codes: all passed" || exit 1
