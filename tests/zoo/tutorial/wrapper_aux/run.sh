#!/bin/bash
# Launch one training process. Usage: bash run.sh [train.py options]
# (under torchrun: torchrun --nproc_per_node=2 --no-python bash run.sh --epochs 3)
set -euo pipefail
cd "$(dirname "$0")"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export DATA_DIR=${DATA_DIR:-./data}
mkdir -p logs
echo "[run.sh] rank ${RANK:-0}/${WORLD_SIZE:-1} on $(hostname), data in $DATA_DIR"
python3 train.py --data-dir "$DATA_DIR" "$@"
echo "[run.sh] rank ${RANK:-0} done"
