#!/usr/bin/env bash
# Installs everything ddpbisect needs to build, test and run its demo: the Debian packages, then the
# project's Python environment `.venv` (PyTorch 2.13 CPU, py-spy, accelerate, Lightning) from
# scripts/requirements.txt. Idempotent and silent when everything is already present; needs root
# (or sudo) for the Debian part only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  cmake g++ ninja-build pkg-config
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libre2-dev
  libgtest-dev libgmock-dev
  libgloo-dev python3-torch python3-venv
  gdb procps chromium tmux
  iproute2 openssh-server openssh-client slurm-wlm munge faketime
  clang libclang-rt-14-dev llvm clang-format shellcheck
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup.sh: need root to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  echo "setup.sh: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The Python environment. DDPBISECT_VENV moves it (several checkouts can share one).
venv=${DDPBISECT_VENV:-$root/.venv}
req=$root/scripts/requirements.txt
want=$(sha256sum "$req" | cut -d' ' -f1)
if [[ -x $venv/bin/python && "$(cat "$venv/.ddpbisect-requirements" 2>/dev/null)" == "$want" ]] &&
  "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  exit 0
fi
echo "setup.sh: installing the Python environment $venv ($(grep -c '^[a-z]' "$req") packages)" >&2
base=python3
command -v python3 >/dev/null && python3 -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null ||
  base=/usr/bin/python3
"$base" -m venv "$venv"
# torch first and alone, so nothing else can ask for another build of it.
"$venv/bin/python" -m pip install -q --disable-pip-version-check torch==2.13.0 2>&1 | grep -v 'is ignored' >&2 || true
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" 2>&1 | grep -v 'is ignored' >&2 || true
"$venv/bin/python" - <<'PY'
import importlib, sys
import torch
assert torch.__version__.startswith("2.13.0"), torch.__version__
assert not torch.version.cuda, f"a CUDA build of torch was installed ({torch.version.cuda})"
for m in ("numpy", "accelerate", "lightning"):
    importlib.import_module(m)
PY
command -v "$venv/bin/py-spy" >/dev/null
command -v "$venv/bin/deepspeed" >/dev/null
echo "$want" >"$venv/.ddpbisect-requirements"
