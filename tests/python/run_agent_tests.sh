#!/bin/bash
# Runs the in-process agent's tests (docs/agent.md) under `python3` from PATH: CTest runs it twice,
# with the project's PyTorch 2.x first on PATH (agent.python) and with Debian's 1.13 (compat.*).
# Extra arguments go to unittest (e.g. test_steps, or -k stack). No pytest needed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"
python3 -c 'import sys, torch; print("agent tests:", sys.executable, "torch", torch.__version__)'
if [ $# -eq 0 ]; then
  exec python3 -m unittest discover -v -s . -p "test_*.py"
fi
exec python3 -m unittest -v "$@"
