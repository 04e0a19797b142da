#!/usr/bin/env bash
# Captures the live launcher fixtures: real failures of the programs in tests/diagnose/live/,
# run under torchrun, `accelerate launch` and Lightning (PyTorch 2.13 from .venv) and under
# Debian's PyTorch 1.13, each saved as NNN-launcher-case/input/: console.log (the terminal,
# stdout and stderr interleaved) plus logs/ (a torchrun --log-dir tree) and fr/ (Flight
# Recorder dumps) where the case makes them. Local paths become /home/user/project. The
# `expect` files are written by hand and never touched here.
# usage: capture.sh [GLOB]   re-captures only the fixtures whose folder name matches GLOB
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
live=$repo/tests/diagnose/live
venv=$repo/.venv/bin
glob=${1:-*}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# capture NAME [VAR=VALUE...] COMMAND...: runs COMMAND in tests/diagnose/live on a terminal,
# with the variables set and no others of torch's debug switches inherited.
capture() {
  local name=$1 dir rc=0
  shift
  [[ $name == $glob ]] || return 0
  dir=$here/$name/input
  rm -rf "$dir" "$scratch/logs" "$scratch/fr"
  mkdir -p "$dir" "$scratch/fr"
  (cd "$live" && env -u TORCH_DISTRIBUTED_DEBUG -u TORCH_CPP_LOG_LEVEL -u NCCL_DEBUG \
      -u MASTER_ADDR -u MASTER_PORT -u PYTHONUNBUFFERED -u PYTHONFAULTHANDLER \
      TORCH_FR_DUMP_TEMP_FILE="$scratch/fr/fr_trace_rank_" \
      timeout 240 /usr/bin/python3 pty_capture.py "$dir/console.log" env "$@") || rc=$?
  if [[ -d $scratch/logs ]]; then cp -r "$scratch/logs" "$dir/logs"; fi
  if compgen -G "$scratch/fr/*" > /dev/null; then cp -r "$scratch/fr" "$dir/fr"; fi
  /usr/bin/python3 "$live/scrub.py" "$dir" "$(readlink -f "$repo/.venv")=/home/user/project/.venv" \
    "$repo=/home/user/project" "$scratch=/tmp/capture"
  echo "$name: exit $rc, console.log $(wc -l < "$dir/console.log") lines"
}

v213=(PATH="$venv:$PATH")
tr=("${v213[@]}" "$venv/torchrun")
logdir=(--log-dir "$scratch/logs" --redirects 3 --tee 3)
acc=("${v213[@]}" "$venv/accelerate" launch --multi_gpu)
# Debian's torchrun on Python 3.11 crashes in to_map() unless --redirects and --tee are 1 or 2
# (3.11's IntFlag does not iterate Std.NONE = 0 and Std.ALL = 3); 2 = stderr to file and screen.
tr113=(/usr/bin/python3 -m torch.distributed.run --redirects 2 --tee 2 --log_dir "$scratch/logs")
# Ranks started by hand in one terminal with the environment contract, no launcher at all.
by_hand113='for r in 0 1; do RANK=$r LOCAL_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 \
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT /usr/bin/python3 train_ddp.py "$0" & done; wait'
detail=(TORCH_DISTRIBUTED_DEBUG=DETAIL)

capture 001-torchrun-exception "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 2 \
  train_ddp.py exception
capture 002-torchrun-exception-logdir "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 2 \
  "${logdir[@]}" train_ddp.py exception --record
capture 003-torchrun-hang "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 3 \
  train_ddp.py hang
capture 004-torchrun-hang-detail "${detail[@]}" "${tr[@]}" --master-port "$(free_port)" \
  --nproc-per-node 3 train_ddp.py hang --no-ddp
capture 005-torchrun-hang-frdump "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 3 \
  train_ddp.py hang --fr-dump
capture 006-torchrun-mismatch "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 2 \
  train_ddp.py mismatch
capture 007-torchrun-mismatch-detail "${detail[@]}" "${tr[@]}" --master-port "$(free_port)" \
  --nproc-per-node 2 train_ddp.py mismatch --no-ddp
capture 008-torchrun-mismatch-logdir "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 2 \
  "${logdir[@]}" train_ddp.py mismatch --record
capture 009-torchrun-unused "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 2 \
  train_ddp.py unused
capture 010-torchrun-sigkill "${tr[@]}" --master-port "$(free_port)" --nproc-per-node 2 \
  train_ddp.py sigkill
n=11
for case in exception hang mismatch unused sigkill; do
  procs=2
  if [[ $case == hang ]]; then procs=3; fi
  capture "$(printf %03d $n)-accelerate-$case" "${acc[@]}" --num_processes $procs \
    --main_process_port "$(free_port)" train_accelerate.py "$case"
  capture "$(printf %03d $((n + 5)))-lightning-$case" "${v213[@]}" python train_lightning.py "$case"
  n=$((n + 1))
done
capture 021-torchrun113-exception "${tr113[@]}" --master_port "$(free_port)" --nproc_per_node 2 \
  train_ddp.py exception --record
capture 022-torchrun113-sigkill "${tr113[@]}" --master_port "$(free_port)" --nproc_per_node 2 \
  train_ddp.py sigkill --record
capture 023-byhand113-exception PORT="$(free_port)" bash -c "$by_hand113" exception
capture 024-byhand113-sigkill PORT="$(free_port)" bash -c "$by_hand113" sigkill
# Infrastructure: the master port is taken, so torchrun's own rendezvous store cannot listen.
if [[ 026-torchrun-port-in-use == $glob ]]; then
  port=$(free_port)
  /usr/bin/python3 -c 'import socket, sys, time; s = socket.socket()
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); time.sleep(60)' "$port" &
  holder=$!
  sleep 1
  capture 026-torchrun-port-in-use "${tr[@]}" --master-port "$port" --nproc-per-node 2 \
    train_ddp.py exception
  kill "$holder"
  wait "$holder" 2> /dev/null || true
fi
# What DETAIL does to a DDP script in 2.13's CPU build: every rank dies in DDP's constructor.
capture 025-torchrun-ddp-detail-segv "${detail[@]}" "${tr[@]}" --master-port "$(free_port)" \
  --nproc-per-node 2 train_ddp.py mismatch
