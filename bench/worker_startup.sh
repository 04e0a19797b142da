#!/usr/bin/env bash
# Time to the first completed training step of a 2-rank job: ddpbisect-worker vs. an equivalent
# Python DDP script under python3 (the project environment first on PATH), measured in the same run (median of N launches).
# Usage: bench/worker_startup.sh [BUILD_DIR] [N]
set -euo pipefail
build=${1:-build} n=${2:-7}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/spec.yaml" <<'EOS'
workload:
  builtin:
    model: [embedding, linear, head]
    dataset: {kind: synthetic, samples: 64, seed: 1}
    params: {steps: 1, batch_size: 16}
stages: [{name: node, nodes: 1, procs_per_node: 2}]
EOS
"$build/ddpbisect" config "$tmp/spec.yaml" >"$tmp/cfg.json"

# first_step MARKER CMD...: seconds from launching 2 ranks until rank 0 prints MARKER.
first_step() {
  local marker=$1; shift
  local port=$((20000 + RANDOM % 30000))
  local start end
  start=$(date +%s.%N)
  RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DDPBISECT_CONFIG="$tmp/cfg.json" \
    "$@" >/dev/null 2>&1 &
  local other=$!
  RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DDPBISECT_CONFIG="$tmp/cfg.json" \
    "$@" 2>/dev/null | while IFS= read -r line; do
      if [[ $line == *"$marker"* ]]; then date +%s.%N >"$tmp/end"; fi
    done
  wait $other || true
  end=$(cat "$tmp/end")
  echo "$end - $start" | bc -l
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for ((i = 0; i < n; i++)); do first_step 'DDPBISECT_HEARTBEAT {"rank":0,"step":0' "$build/ddpbisect-worker"; done | median >"$tmp/worker"
for ((i = 0; i < n; i++)); do first_step FIRST_STEP_DONE python3 "$here/python_ddp_first_step.py"; done | median >"$tmp/python"
w=$(cat "$tmp/worker") p=$(cat "$tmp/python")
printf 'time to first completed step, 2 ranks, median of %d:\n' "$n"
printf '  ddpbisect-worker   %.3f s\n' "$w"
printf '  python3 DDP        %.3f s\n' "$p"
printf '  speedup            %.2fx (target >= 2x)\n' "$(echo "$p / $w" | bc -l)"
