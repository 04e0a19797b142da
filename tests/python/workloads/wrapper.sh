#!/bin/bash
# A launch script as people write them: set things up, then run Python (not exec'd).
set -e
export OMP_NUM_THREADS=1
cd "$(dirname "$0")"
python3 "$@"
echo "wrapper: python exited"
