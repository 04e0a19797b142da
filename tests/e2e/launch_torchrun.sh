#!/usr/bin/env bash
# Issue 14 item 4: a job started through the user's own torchrun (PyTorch 2.13's, from PATH):
# two torchrun agents on this host, 2 ranks each, c10d rendezvous. A rank-dependent bug (global
# rank 3 rejects a sample) is reduced to its minimum; a hang gets every rank's stack (the ranks
# are grandchildren of ddpbisect); no process is left, checked through /proc.
# Usage: launch_torchrun.sh DDPBISECT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v torchrun >/dev/null || skip "no torchrun on PATH"
tmp=$(mktemp -d)
[[ -n ${KEEP:-} ]] || at_exit rm -rf "$tmp"
json() { py "import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }
trial_pids() {  # processes of any trial under $tmp, by their token (never an empty one)
  local f token
  for f in "$tmp"/*/trials/*/outcome.json; do
    [[ -e $f ]] || continue
    token=$(json "$f" "o['token']")
    [[ -n $token ]] && token_pids "$token"
  done | xargs
}
leftovers() {  # by the trials' tokens, and by the program's path
  echo $(($(trial_pids | wc -w) + $(pgrep -f -- "$here/programs/torchrun_train.py" | wc -l)))
}
at_exit 'pids=$(trial_pids); [[ -z $pids ]] || kill -9 $pids 2>/dev/null'

# 1. The rank-dependent bug, reduced: it needs global rank 3 (a world of 4) and sample 3.
cat >"$tmp/bug.yaml" <<EOS
workload:
  command: [torchrun, --nproc-per-node=8, $here/programs/torchrun_train.py, train,
            --samples, "{samples}", --steps, "2"]
  samples: 4
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: multinode, nodes: 2, procs_per_node: 2}
limits: {trial_timeout: 180s}
EOS
# It takes 14 trials, 110 s on a quiet 2-core machine. Stopped (SIGINT: the journal is kept)
# well before ctest's timeout, so that a slow CI log says what every trial was judged.
t0=$SECONDS
timeout -s INT 420 "$bin" "$tmp/bug.yaml" --out "$tmp/red" --quiet --confirm 1 >"$tmp/red.out" 2>"$tmp/red.err"
rc=$?
echo "torchrun reduction: $((SECONDS - t0)) s, $(ls "$tmp/red/trials" | wc -l) trials"
[[ $rc == 0 ]] || { bad "the torchrun reduction exited $rc"; tail -5 "$tmp/red.err" >&2; trial_story "$tmp/red"; }
py '
import glob, json, sys
r = json.load(open(sys.argv[1] + "/red/report.json"))
m, s = r["minimal"], r["signature"]
assert (m["nodes"], m["procs_per_node"]) == (2, 2), m
assert m["sample_indices"] == "3", m
assert s["exception"] == "ValueError" and s["frame"] == "torchrun_train.py:check_label", s
assert s["ranks"] == [3], s
for f in glob.glob(sys.argv[1] + "/red/trials/*/outcome.json"):
    o = json.load(open(f))
    if o["config"]["nodes"] * o["config"]["procs_per_node"] == 4:
        assert sorted(r["rank"] for r in o["ranks"]) == [0, 1, 2, 3], f
        assert len(o["agent_logs"]) == 2, f
' "$tmp" && ok || { bad "the torchrun job was not reduced to 2x2 ranks and sample 3"; [[ $rc != 0 ]] || trial_story "$tmp/red"; }
[[ $(leftovers) == 0 ]] && ok || bad "processes left after the reduction: $(leftovers)"

# 2. A hang under torchrun: rank 2 stops before its all_reduce; every rank's stack is harvested.
cat >"$tmp/hang.yaml" <<EOS
workload:
  command: [torchrun, $here/programs/torchrun_train.py, hang, --samples, 0-7, --steps, "4"]
stages: [{name: multinode, nodes: 2, procs_per_node: 2}]
limits: {hang_after: 3s, trial_timeout: 90s}
EOS
"$bin" run "$tmp/hang.yaml" --out "$tmp/hang" --json >"$tmp/hang.json" 2>"$tmp/hang.err"
rc=$?
[[ $rc == 1 && $(json "$tmp/hang.json" "o['hang_declared_s'] is not None") == True ]] ||
  bad "the torchrun hang was not declared (exit $rc): $(json "$tmp/hang.json" "o['reason']")"
for r in 0 1 2 3; do
  want='in (wait_for_a_peer_that_never_comes|wait|backward|_engine_run_backward|__call__|forward|_sync_params_and_buffers|_pre_forward)'
  [[ $r == 2 ]] && want='in wait_for_a_peer_that_never_comes'
  json "$tmp/hang.json" "[x for x in o['ranks'] if x['rank'] == $r][0]['stack']" | grep -qE "torchrun_train.py\", line [0-9]+ in main" ||
    bad "torchrun hang: rank $r's stack lacks main(): $(json "$tmp/hang.json" "o['ranks'][$r]['stack'][:300]")"
  json "$tmp/hang.json" "[x for x in o['ranks'] if x['rank'] == $r][0]['stack']" | grep -qE "$want" ||
    bad "torchrun hang: rank $r's stack is not where it hangs"
done
json "$tmp/hang.json" "o['diagnosis']['signature']['category']" | grep -qx hang && ok ||
  bad "torchrun hang: diagnosed as $(json "$tmp/hang.json" "o['reason']")"
[[ $(leftovers) == 0 ]] && ok || bad "processes left after the hang: $(leftovers)"

finish launch/torchrun
