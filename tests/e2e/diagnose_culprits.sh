#!/usr/bin/env bash
# Issue #15, live hangs whose culprit is one rank (tests/e2e/programs/ddp_culprits.py, Gloo):
#   data_queue, 4 ranks: rank 2 waits in its data queue while the others wait in all_reduce;
#   barrier_rank0, 2 ranks: only rank 0 calls barrier() (in save_checkpoint).
# `run` and `explain` name the culprit rank and its frame first; a reduction of the barrier job
# leads its report with rank 0 at save_checkpoint, and its debug rerun's collective mismatch is
# shown as the explanation of the hang, not filed as another failure. Usage: diagnose_culprits.sh DDPBISECT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
program=$(cd "$(dirname "$0")" && pwd)/programs/ddp_culprits.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

spec() {  # NAME MODE RANKS
  cat >"$tmp/$1.yaml" <<YAML
version: 1
name: culprit-$1
workload:
  command: [python3, $program, $2]
  cwd: .
stages:
  - {name: node, nodes: 1, procs_per_node: $3}
limits: {trial_timeout: 60s, hang_after: 3s}
YAML
}
spec queue data_queue 4
spec barrier barrier_rank0 2

# expect_culprit NAME RANK FRAME_FUNCTION
expect_culprit() {
  local name=$1 rank=$2 fn=$3
  "$bin" run "$tmp/$name.yaml" --out "$tmp/run-$name" >"$tmp/$name.run" 2>&1
  local rc=$?
  [[ $rc == 1 ]] || { bad "$name: run exited $rc, want 1"; cat "$tmp/$name.run" >&2; return; }
  head -1 "$tmp/$name.run" | grep -q "^fail: rank $rank: hang at ddp_culprits.py:$fn" && ok ||
    bad "$name: run does not lead with rank $rank at $fn: $(head -1 "$tmp/$name.run")"
  "$bin" explain "$tmp/run-$name/trials/0001" >"$tmp/$name.explain"
  head -1 "$tmp/$name.explain" | grep -q "^root cause: rank $rank, hang" && ok ||
    bad "$name: explain names $(head -1 "$tmp/$name.explain")"
  sed -n 2p "$tmp/$name.explain" | grep -q "ddp_culprits.py:[0-9]* in $fn$" && ok ||
    bad "$name: explain's first frame is $(sed -n 2p "$tmp/$name.explain")"
}
expect_culprit queue 2 next_batch
expect_culprit barrier 0 save_checkpoint

"$bin" reduce "$tmp/barrier.yaml" --out "$tmp/reduce" --quiet >"$tmp/reduce.out" 2>&1 ||
  bad "reduce exited $?: $(tail -3 "$tmp/reduce.out")"
head -1 "$tmp/reduce/report.md" | grep -q "^# rank 0: .*(ddp_culprits.py:[0-9]*)" && ok ||
  bad "report.md leads with $(head -1 "$tmp/reduce/report.md")"
py "
import json, sys
r = json.load(open('$tmp/reduce/report.json'))
d = r.get('debug_rerun') or {}
sig = (d.get('signature') or {})
assert r['signature']['category'] == 'hang' and r['signature']['frame'].endswith('save_checkpoint'), r['signature']
# The DETAIL rerun turns the hang into the mismatch behind it, and it is the explanation.
assert sig.get('category') == 'collective_mismatch', d
assert not r.get('debug_notes'), r.get('debug_notes')
" && ok || bad "report.json: the debug rerun is not the mismatch explaining the hang"
finish "diagnose culprits"
