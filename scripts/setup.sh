#!/usr/bin/env bash
# Installs every Debian package ddpbisect needs to build, test and run its demo.
# Idempotent and silent when everything is already present; needs root (or sudo) otherwise.
set -euo pipefail

packages=(
  cmake g++ ninja-build pkg-config
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libre2-dev
  libgtest-dev libgmock-dev
  libtorch-dev libgloo-dev python3-torch
  gdb procps chromium
  iproute2 openssh-server openssh-client slurm-wlm munge faketime
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup.sh: need root to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq "${missing[@]}" >/dev/null
