#!/usr/bin/env bash
# shellcheck disable=SC2016  # the spec's values are single-quoted on purpose: data, never expanded
# Reproduces, without ddpbisect: collective_mismatch RuntimeError
# 2 ranks on this machine (1 node of 2), with torchrun's environment contract. Run it from any folder;
# it needs bash, coreutils and grep.
# Exit status:
#   1  reproduced: a rank failed with the pinned signature (its exception, category
#      pattern and frame found in the rank logs; for a hang: still running at the timeout)
#   0  did not reproduce: every rank exited 0
#   3  did not reproduce: it failed, but differently (not the pinned signature)
#   2  could not start: no worker, program or working folder, or a rank could not exec
# Rank logs: rank<N>.log beside this script. REPRO_TIMEOUT (seconds) overrides the timeout.
set -u
here=$(cd "$(dirname "$0")" && pwd) || exit 2
cant_start() { echo "run.sh: could not start: $*" >&2; exit 2; }
want_exception=RuntimeError
want_category=collective_mismatch
want_pattern='op\.preamble\.length <= op\.nbytes|Detected mismatch between collectives on ranks|distributed collective mismatch|Error when verifying shape tensors for collective|Cannot apply desired operation due to shape mismatches'
want_frame=''
timeout_s=${REPRO_TIMEOUT:-1800}
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1} MASTER_PORT=${MASTER_PORT:-$((20000 + RANDOM % 20000))}
export WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 GROUP_WORLD_SIZE=1 ROLE_WORLD_SIZE=2
export TORCHELASTIC_RUN_ID=${TORCHELASTIC_RUN_ID:-ddpbisect-repro}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} DDPBISECT_CONFIG="$here/config.json"
export DDPBISECT_SAMPLES=''
export DDPBISECT_COMPONENTS='' DDPBISECT_FEATURES=''
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 TORCH_SHOW_CPP_STACKTRACES=1
export PYTHONPATH="$here/python/agent:$here/python${PYTHONPATH:+:$PYTHONPATH}"
export DDPBISECT_AGENT=1 DDPBISECT_STACK_SIGNAL=12
cd /work/job || cant_start "no working folder "/work/job
command -v accelerate >/dev/null || cant_start "no program "accelerate
procs=1 unit=node
set -m  # each rank in its own process group: a timeout stops all of its processes
pids=()
for ((rank = 0; rank < procs; rank++)); do
  RANK=$rank LOCAL_RANK=$((rank % LOCAL_WORLD_SIZE)) NODE_RANK=$((rank / LOCAL_WORLD_SIZE)) \
  GROUP_RANK=$((rank / LOCAL_WORLD_SIZE)) ROLE_RANK=$rank accelerate launch --multi_gpu --num_processes=2 --num_machines=1 '--main_process_port='"$MASTER_PORT"'' --max_restarts=0 train.py >"$here/$unit$rank.log" 2>&1 &
  pids+=($!)
done
hung=0
deadline=$((SECONDS + timeout_s))
while :; do
  alive=0
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
  [[ $alive -eq 1 ]] || break
  if ((SECONDS >= deadline)); then
    hung=1
    echo "run.sh: ranks still running after ${timeout_s}s: stopping them"
    for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
    sleep 2
    for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null; done
    break
  fi
  sleep 0.2
done
failed=0 noexec=0 signaled=0
for ((rank = 0; rank < procs; rank++)); do
  wait "${pids[$rank]}"; rc=$?
  echo "$unit $rank exited $rc (log: $here/$unit$rank.log)"
  [[ $rc -eq 0 ]] || failed=1
  [[ $rc -eq 126 || $rc -eq 127 ]] && noexec=1
  [[ $rc -gt 128 ]] && signaled=1
done
logs=()
for ((rank = 0; rank < procs; rank++)); do logs+=("$here/$unit$rank.log"); done
found() { grep -qE -- "$1" "${logs[@]}" 2>/dev/null; }
matches() {
  if [[ -n $want_exception ]]; then
    found "(^|[^A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_]*\.)*${want_exception}(:|$)" || return 1
  fi
  if [[ -n $want_pattern ]]; then
    # The diagnosis's pattern for the category (RE2: grep -P reads it; without -P, skipped).
    grep -qP -- "$want_pattern" "${logs[@]}" 2>/dev/null; rc=$?
    if [[ $rc -eq 1 ]]; then
      [[ $want_category == signal && $signaled -eq 1 ]] || return 1
    fi
  fi
  if [[ -n $want_frame ]]; then found "$want_frame" || return 1; fi
  return 0
}
case $want_category in
  hang | trial_timeout)
    if [[ $hung -eq 1 ]]; then echo "run.sh: reproduced ($want_category)"; exit 1; fi ;;
esac
if [[ $noexec -eq 1 ]] && ! matches; then cant_start "a rank could not run its program (exit 126/127)"; fi
if [[ $failed -eq 0 && $hung -eq 0 ]]; then echo "run.sh: did not reproduce (every rank exited 0)"; exit 0; fi
if [[ $hung -eq 0 ]] && matches; then echo "run.sh: reproduced"; exit 1; fi
echo "run.sh: did not reproduce: the ranks failed differently (see the logs)"
exit 3
