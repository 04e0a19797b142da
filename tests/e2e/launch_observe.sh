#!/usr/bin/env bash
# ddpbisect run on misbehaving ranks: segfault, SIGKILL, hang, an escaped grandchild, an output
# flood, a Gloo hang in Python and the worker's hang fault, a driver SIGTERMed mid-trial. After
# each, no process of the trial may remain: checked through /proc, not through ddpbisect.
set -u
bin=$1 worker_ok=${2:-yes}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'pkill -f "$tmp" 2>/dev/null; [[ -n ${KEEP:-} ]] || rm -rf "$tmp"' EXIT
fails=0 passed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
json() { /usr/bin/python3 -c "import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }

# Processes that belong to the trial: by the marker in their argv, and by the trial token.
leftovers() {
  local marker=$1 token=${2:-} n
  n=$(pgrep -f -- "$marker" | wc -l)
  if [[ -n $token ]]; then
    n=$((n + $(grep -lsa "DDPBISECT_TRIAL_TOKEN=$token" /proc/[0-9]*/environ 2>/dev/null | wc -l)))
  fi
  echo "$n"
}

# spec NAME MODE [LIMITS]: a 2-rank spec running misbehave.py MODE, marked with a unique path.
spec() {
  local name=$1 mode=$2 limits=${3:-"{hang_after: 2s, grace: 1s, trial_timeout: 60s}"}
  cat >"$tmp/$name.yaml" <<EOS
workload:
  command: [python3, $here/programs/misbehave.py, $mode, $tmp/$name]
stages: [{name: node, nodes: 1, procs_per_node: 2}]
limits: $limits
EOS
}

run_case() {  # run_case NAME WANT_RC -> outcome in $tmp/NAME.json
  local name=$1 want=$2
  "$bin" run "$tmp/$name.yaml" --out "$tmp/out-$name" --json >"$tmp/$name.json" 2>"$tmp/$name.err"
  local rc=$?
  [[ $rc == "$want" ]] || { bad "$name: exit $rc, want $want"; cat "$tmp/$name.err"; return 1; }
  local left; left=$(leftovers "$tmp/$name" "$(json "$tmp/$name.json" "o['token']")")
  [[ $left == 0 ]] || { bad "$name: $left processes left behind"; return 1; }
  return 0
}

spec segv segv
if run_case segv 1; then
  [[ $(json "$tmp/segv.json" "o['ranks'][1]['signal']") == SIGSEGV ]] || bad "segv: rank 1 not reported as SIGSEGV"
  [[ $(json "$tmp/segv.json" "o['ranks'][0]['killed_by']") == early_stop ]] || bad "segv: rank 0 not stopped early"
  [[ $(json "$tmp/segv.json" "o['first_failure_rank']") == 1 ]] && ok || bad "segv: wrong first failure"
fi

spec sigkill sigkill
if run_case sigkill 1; then
  [[ $(json "$tmp/sigkill.json" "o['ranks'][0]['signal']") == SIGKILL ]] && ok || bad "sigkill: rank 0 not SIGKILL"
fi

spec hang hang
if run_case hang 1; then
  lag=$(json "$tmp/hang.json" "o['hang_declared_s'] - max(r['last_progress_s'] for r in o['ranks'])")
  awk "BEGIN {exit !($lag <= 10)}" || bad "hang: declared ${lag}s after the last progress"
  for r in 0 1; do
    json "$tmp/hang.json" "o['ranks'][$r]['stack']" | grep -q 'misbehave.py", line .* in wait_here_forever' ||
      bad "hang: rank $r stack lacks the script frame"
  done
  ok
fi

# Stack requests per process: a shell wrapping Python, py-spy off: the shell is left alone, the
# Python gets faulthandler's SIGABRT. A Python that catches the agent's signal (SIGUSR2, here a
# faulthandler.register standing in for the agent) gets that instead and lives on until the kill.
cat >"$tmp/wrapped.yaml" <<EOS
workload:
  command: [sh, -c, "python3 $here/programs/misbehave.py hang $tmp/wrapped; echo wrapper-done"]
  agent: false  # the path for a Python without the agent: faulthandler's SIGABRT
stages: [{name: node, nodes: 1, procs_per_node: 2}]
limits: {hang_after: 2s, grace: 1s, trial_timeout: 60s}
EOS
if DDPBISECT_PY_SPY=0 run_case wrapped 1; then
  [[ $(json "$tmp/wrapped.json" "o['stacks_by']") == signal ]] || bad "wrapped: stacks by $(json "$tmp/wrapped.json" "o['stacks_by']")"
  for r in 0 1; do
    json "$tmp/wrapped.json" "o['ranks'][$r]['stack']" | grep -q 'misbehave.py", line .* in wait_here_forever' ||
      bad "wrapped: rank $r stack lacks the script frame"
  done
  grep -q wrapper-done "$tmp"/out-wrapped/trials/*/node0/rank0.stdout && ok || bad "wrapped: the shell did not outlive its Python"
fi
cat >"$tmp/agent.yaml" <<EOS
workload:
  command: [python3, -c, "import faulthandler, runpy, signal, sys; faulthandler.register(signal.SIGUSR2, all_threads=True); sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
            $here/programs/misbehave.py, hang, $tmp/agent]
stages: [{name: node, nodes: 1, procs_per_node: 2}]
limits: {hang_after: 2s, grace: 1s, trial_timeout: 60s}
EOS
if run_case agent 1; then
  [[ $(json "$tmp/agent.json" "o['stacks_by']") == agent ]] || bad "agent: stacks by $(json "$tmp/agent.json" "o['stacks_by']")"
  for r in 0 1; do
    json "$tmp/agent.json" "o['ranks'][$r]['stack']" | grep -q 'misbehave.py", line .* in wait_here_forever' ||
      bad "agent: rank $r stack lacks the script frame"
    [[ $(json "$tmp/agent.json" "o['ranks'][$r]['signal']") != SIGABRT ]] || bad "agent: rank $r was aborted"
  done
  ok
fi

spec grandchild grandchild
run_case grandchild 1 && ok

spec flood flood "{log_cap: 1MB}"
if run_case flood 0; then
  [[ $(json "$tmp/flood.json" "o['log_cap_hit']") == True ]] || bad "flood: cap not reported"
  size=$(du -cb "$tmp"/out-flood/trials/*/node0/rank* | tail -1 | cut -f1)
  (( size < 1300000 )) || bad "flood: $size bytes on disk for a 1MB cap"
  grep -q 'the last line of rank 1' "$tmp"/out-flood/trials/*/node0/rank1.stderr || bad "flood: the tail was lost"
  grep -q 'log cap was reached' "$tmp"/out-flood/trials/*/node0/rank0.stdout && ok || bad "flood: no cap note"
fi

# The driver SIGTERMed mid-trial leaves no rank behind and exits 128+15.
spec term hang "{hang_after: 60s}"
"$bin" run "$tmp/term.yaml" --out "$tmp/out-term" >/dev/null 2>&1 &
driver=$!
for _ in $(seq 100); do [[ $(leftovers "$tmp/term") -ge 2 ]] && break; sleep 0.1; done
kill -TERM $driver; wait $driver; rc=$?
sleep 0.2
[[ $rc == 143 ]] || bad "sigterm: driver exited $rc, want 143"
[[ $(leftovers "$tmp/term") == 0 ]] && ok || bad "sigterm: ranks left behind"

# A missing program is infra (125), not the bug.
cat >"$tmp/missing.yaml" <<EOS
workload: {command: [no-such-program-$$, $tmp/missing]}
stages: [{name: node, procs_per_node: 2}]
EOS
run_case missing 125 && ok

# A real Gloo hang under python3: rank 0 blocked in all_reduce.
cat >"$tmp/ddp.yaml" <<EOS
workload: {command: [python3, $here/programs/ddp_hang.py, $tmp/ddp]}
stages: [{name: node, nodes: 1, procs_per_node: 2}]
limits: {trial_timeout: 90s}
EOS
if run_case ddp 1; then
  lag=$(json "$tmp/ddp.json" "o['hang_declared_s'] - max(r['last_progress_s'] for r in o['ranks'])")
  awk "BEGIN {exit !($lag <= 10)}" || bad "ddp hang: declared ${lag}s after the last progress"
  json "$tmp/ddp.json" "o['ranks'][0]['stack']" | grep -q 'ddp_hang.py", line 21 in main' || bad "ddp hang: rank 0 frame"
  json "$tmp/ddp.json" "o['ranks'][1]['stack']" | grep -q 'in wait_for_a_signal_that_never_comes' && ok || bad "ddp hang: rank 1 frame"
fi

if [[ $worker_ok == yes ]]; then
  cat >"$tmp/whang.yaml" <<EOS
workload:
  builtin:
    model: [linear, head]
    dataset: {samples: 64}
    params: {steps: 50, batch_size: 8}
    faults: [{kind: hang, requires: {ranks: [1], step: 3}}]
stages: [{name: node, nodes: 1, procs_per_node: 2}]
EOS
  if run_case whang 1; then
    json "$tmp/whang.json" "o['ranks'][1]['stack']" | grep -q 'in deadlocked_loader' || bad "worker hang: rank 1 frame"
    json "$tmp/whang.json" "o['ranks'][0]['stack']" | grep -qE 'in (backward_and_)?allreduce' && ok || bad "worker hang: rank 0 frame"
  fi
fi

echo "launch/observe: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
