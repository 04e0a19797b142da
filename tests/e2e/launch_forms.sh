#!/usr/bin/env bash
# Issue 26: the launch forms users type. The seed case (a launch-era script that reads
# --local_rank; a NameError on local rank 1 in its second epoch) under
# `python -m torch.distributed.launch --nproc_per_node 2`, and the same script as a plain command
# with `--local_rank {local_rank}`: each reduced to 2 ranks and epochs=2, rank 1's NameError, with
# exactly as many rank processes run as each trial reports; then the printed repro (`check
# repro.yaml --expect fail`, and run.sh) reproduces it. Nothing is left behind.
# Usage: launch_forms.sh DDPBISECT [FORM...]   (FORM: launch, plain, accelerate, deepspeed, spawn; the first
# two by default). accelerate: the same bug in an Accelerate script under `accelerate launch
# --multi_gpu --num_processes 2`, whose one-rank trials are accelerate's own one-process start.
# deepspeed: the launch-era script under `deepspeed --num_gpus 2`, its ranks started as
# deepspeed's launch.py starts them (plain processes, --local_rank=N).
# spawn: in a script that starts its own ranks with mp.spawn (workload.world_size_param), one
# process a trial, whose rank count is counted from the agent's trace files.
set -u
source "$(dirname "$0")/lib.sh"
bin=$(realpath "$1")
shift
forms=("$@")
[[ $# -gt 0 ]] || forms=(launch plain)
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
[[ -n ${KEEP:-} ]] || at_exit rm -rf "$tmp"

# program FILE: the test's program, copied under this run's own folder; the check that no rank is
# left behind looks for its path, which no other test (launch.forms.deepspeed runs the same
# program beside this one under ctest -j) runs.
program() { cp "$here/programs/$1" "$tmp/$1" && prog=$tmp/$1; }
spec() {  # spec NAME COMMAND-LIST
  cat >"$tmp/$1.yaml" <<EOS
workload:
  command: $2
  params: {epochs: 3}
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: node, nodes: 1, procs_per_node: 2}
limits: {trial_timeout: 120s}
EOS
}
if [[ ${forms[0]} == spawn ]]; then
  program spawn_bug.py
  spec spawn "[python3, $prog, --nprocs, \"{nprocs}\", --epochs, \"{epochs}\"]"
  sed -i 's/^  params: {epochs: 3}$/  params: {epochs: 3}\n  world_size_param: nprocs/' "$tmp/spawn.yaml"
elif [[ ${forms[0]} == deepspeed ]]; then
  # deepspeed: the launch-era script under the runner, whose ranks ddpbisect starts as its
  # launch.py does (each a plain process given --local_rank=N).
  program launch_era_bug.py
  command -v deepspeed >/dev/null || skip "no deepspeed on PATH"
  spec deepspeed "[deepspeed, --num_gpus, \"2\", --master_port, \"29555\", $prog, --epochs, \"{epochs}\"]"
elif [[ ${forms[0]} == accelerate ]]; then
  program accelerate_bug.py
  command -v accelerate >/dev/null && python3 -c 'import accelerate' 2>/dev/null ||
    skip "no accelerate on PATH"
  spec accelerate "[accelerate, launch, --multi_gpu, --num_processes, \"2\", $prog, --epochs, \"{epochs}\"]"
else
  program launch_era_bug.py
  python3 -c 'import torch.distributed.launch' 2>/dev/null || skip "no torch.distributed.launch for python3"
  spec launch "[python3, -m, torch.distributed.launch, --nproc_per_node, \"2\", $prog, --epochs, \"{epochs}\"]"
  spec plain "[python3, $prog, --local_rank, \"{local_rank}\", --epochs, \"{epochs}\"]"
fi
script=$(basename "$prog" .py)

for form in "${forms[@]}"; do
  t0=$SECONDS
  "$bin" "$tmp/$form.yaml" --out "$tmp/$form" --quiet --confirm 1 >"$tmp/$form.out" 2>"$tmp/$form.err" ||
    { bad "$form: the reduction exited $?"; tail -5 "$tmp/$form.err" >&2; continue; }
  echo "$form: $((SECONDS - t0)) s, $(ls "$tmp/$form/trials" | wc -l) trials"
  py '
import glob, json, os, sys
out = sys.argv[1]
r = json.load(open(out + "/report.json"))
m, s = r["minimal"], r["signature"]
assert m["world_size"] == 2 and m["params"]["epochs"] == 2, m
spawn = sys.argv[2] == "spawn_bug"
# (in a function, the same bug is an UnboundLocalError, a subclass of NameError)
assert s["exception"] == ("UnboundLocalError" if spawn else "NameError") and s["ranks"] == [1], s
assert s["frame"] == sys.argv[2] + (".py:main" if spawn else ".py:<module>"), s
for f in glob.glob(out + "/trials/*/outcome.json"):
    o = json.load(open(f))
    want = o["config"]["nodes"] * o["config"]["procs_per_node"]
    if spawn:  # one process started its ranks: count those that joined the process group
        ran = 0
        for t in glob.glob(os.path.dirname(f) + "/agent/collectives.*.jsonl"):
            ran += "init_process_group" in open(t).read()
        assert len(o["ranks"]) == 1 and ran == want, (f, want, ran)
    else:
        assert len(o["ranks"]) == want, (f, want, len(o["ranks"]))
' "$tmp/$form" "$script" && ok || bad "$form: not reduced to 2 ranks, epochs=2 and rank 1's NameError"
  # The launch form's trials: one launcher a node, which started exactly the stage's ranks.
  # (accelerate's one-rank trials are its own one-process start: no agent.)
  if [[ $form != plain && $form != spawn && $form != deepspeed ]]; then
    py '
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/trials/*/outcome.json"):
    o = json.load(open(f))
    want = o["config"]["nodes"] * o["config"]["procs_per_node"]
    assert sorted(x["rank"] for x in o["ranks"]) == list(range(want)), f
    agents = 0 if want == 1 and sys.argv[2] == "accelerate" else o["config"]["nodes"]
    assert len(o.get("agent_logs", [])) == agents, (f, o.get("agent_logs"))
' "$tmp/$form" "$form" && ok || bad "$form: a trial ran other ranks than its stage"
  fi
  (cd "$tmp" && "$bin" check "$tmp/$form/repro/repro.yaml" --expect fail --out "$tmp/$form-check" >"$tmp/$form-check.out" 2>&1) &&
    ok || { bad "$form: check repro.yaml --expect fail exited $?"; tail -5 "$tmp/$form-check.out" >&2; }
  bash "$tmp/$form/repro/run.sh" >"$tmp/$form-run.out" 2>&1
  rc=$?
  [[ $rc == 1 ]] && grep -q "reproduced" "$tmp/$form-run.out" && ok ||
    { bad "$form: run.sh exited $rc, not 1 (reproduced)"; tail -8 "$tmp/$form-run.out" >&2; }
  # run.sh ran the minimal topology: two ranks' lines, no third.
  n=$(cat "$tmp/$form"/repro/*.log | grep -o "local rank [0-9]*: epoch 0 done" | sort -u | wc -l)
  [[ $n == 2 ]] && ok || bad "$form: run.sh ran $n ranks' epoch 0, not 2"
  # Samples are no dimension of these jobs: the report says so, not "0 -> 0".
  grep -q '^| samples | all | all (not reduced) |$' "$tmp/$form/report.md" && ok ||
    bad "$form: report.md's samples row: $(grep '^| samples' "$tmp/$form/report.md")"
done
[[ -z $(pgrep -f -- "$prog") ]] && ok || bad "processes left: $(pgrep -af -- "$prog")"
finish launch/forms
