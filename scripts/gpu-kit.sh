#!/usr/bin/env bash
# Issue 31: a folder to carry to a GPU machine that has none of our packages (one H200, its own
# PyTorch + CUDA at `python3`, no package registry): the driver and its helpers from this build,
# every shared library they load (the C library and its loader too, so an older glibc there does
# not matter), the Python agent and helper module, tests/gpu/, and optionally the Debian packages
# a build of ddpbisect-worker against the device's own CUDA libtorch needs (unpacked there with
# `dpkg -x`, no root).
#
# usage: scripts/gpu-kit.sh [--debs] [BUILD_DIR [KIT_DIR]]   (defaults: build, build/gpu-kit)
# On the device: KIT/tests/gpu/run.sh [OUT_DIR]   (exits 77 "skipped: no GPU" where there is none)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
debs=0
if [[ ${1:-} == --debs ]]; then
  debs=1
  shift
fi
build=$(realpath "${1:-$root/build}")
kit=${2:-$build/gpu-kit}
die() {
  echo "gpu-kit: $*" >&2
  exit 1
}
[[ -x $build/ddpbisect ]] || die "no ddpbisect in $build (build it first: cmake --build --preset default)"
[[ ! -e $kit || -f $kit/KIT ]] || die "$kit exists and is not a kit: not overwriting it"
rm -rf "$kit"
mkdir -p "$kit"
kit=$(realpath "$kit")

# The install layout (bin, libexec/ddpbisect, share/ddpbisect) is what the driver looks for.
cmake --install "$build" --prefix "$kit/prefix" >"$kit/install.log" 2>&1 ||
  die "cmake --install failed: $(tail -3 "$kit/install.log")"
rm -f "$kit/prefix/libexec/ddpbisect/ddpbisect-worker"  # this one is CPU libtorch: built there
mkdir -p "$kit/lib" "$kit/real"

# Each ELF program moves to real/ and gets a wrapper that runs it through the kit's own loader
# and libraries: nothing of the device's C++ runtime is needed, and the kit's libraries are not
# inherited by the ranks (the loader's --library-path applies to that one process). The loader
# is then /proc/self/exe, so the wrapper names the helpers and the agent itself.
wrap() {  # wrap PATH (relative to prefix)
  local rel=$1 name
  name=$(basename "$rel")
  mv "$kit/prefix/$rel" "$kit/real/$name"
  # Without the debug info: the kit travels (a device's carry is 64 MiB in all).
  strip --strip-debug "$kit/real/$name" 2>/dev/null || true
  cat >"$kit/prefix/$rel" <<'EOS'
#!/bin/sh
kit=$(dirname "$(readlink -f "$0")")
while [ ! -f "$kit/KIT" ] && [ "$kit" != / ]; do kit=$(dirname "$kit"); done
p=$kit/prefix
export DDPBISECT_ISOLATE=${DDPBISECT_ISOLATE:-$p/libexec/ddpbisect/ddpbisect-isolate}
export DDPBISECT_WARM=${DDPBISECT_WARM:-$p/libexec/ddpbisect/ddpbisect-warm}
export DDPBISECT_AGENT_DIR=${DDPBISECT_AGENT_DIR:-$p/share/ddpbisect/python/agent}
[ -x "$p/libexec/ddpbisect/ddpbisect-worker" ] &&
  export DDPBISECT_WORKER=${DDPBISECT_WORKER:-$p/libexec/ddpbisect/ddpbisect-worker}
exec "$kit/lib/ld-linux-x86-64.so.2" --library-path "$kit/lib" "$kit/real/@NAME@" "$@"
EOS
  sed -i "s|@NAME@|$name|" "$kit/prefix/$rel"
  chmod +x "$kit/prefix/$rel"
  # Every library it loads, as this machine resolves them.
  local missing
  missing=$(ldd "$kit/real/$name" | awk '/not found/ {print $1}')
  [[ -z $missing ]] || die "$name: libraries not found here: $missing"
  ldd "$kit/real/$name" | awk '/=> \// {print $3} /^\s*\/.*ld-linux/ {print $1}' |
    while read -r lib; do cp -Ln "$lib" "$kit/lib/" 2>/dev/null || true; done
}
for rel in bin/ddpbisect libexec/ddpbisect/ddpbisect-isolate libexec/ddpbisect/ddpbisect-warm \
  libexec/ddpbisect/ddpbisect-nccl-probe; do
  [[ -f $kit/prefix/$rel ]] && file -b "$kit/prefix/$rel" | grep -q ELF && wrap "$rel"
done
[[ -e $kit/lib/ld-linux-x86-64.so.2 ]] || cp -L /lib64/ld-linux-x86-64.so.2 "$kit/lib/"

# The sources a worker build there needs (no tests), and the checks that run there.
mkdir -p "$kit/src" "$kit/tests"
tar -C "$root" -cf - CMakeLists.txt CMakePresets.json cmake src python configs repro_templates README.md |
  tar -C "$kit/src" -xf -
cp -r "$root/tests/gpu" "$kit/tests/gpu"

if ((debs)); then
  # What a worker build needs that a bare image may lack: the build tools and our libraries'
  # headers (the compiler itself must be the device's own: a compiler does not travel).
  mkdir -p "$kit/debs"
  (cd "$kit/debs" && apt-get download cmake cmake-data ninja-build libjsoncpp25 librhash0 \
    libuv1 libarchive13 libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev nlohmann-json3-dev libre2-dev \
    libre2-9 libabsl-dev libabsl20220623 libgloo-dev libgloo0 pkg-config libpkgconf3 \
    pkgconf pkgconf-bin) >"$kit/debs.log" 2>&1 || die "apt-get download failed: $(tail -3 "$kit/debs.log")"
fi

{
  echo "ddpbisect GPU kit, built $(date -u +%FT%TZ) on $(uname -n)"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "glibc needed: $(objdump -T "$kit/real/ddpbisect" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1) (bundled)"
  echo "debs: $( ((debs)) && ls "$kit/debs" | wc -l || echo none)"
} >"$kit/KIT"
echo "gpu-kit: $kit ($(du -sh "$kit" | cut -f1)); on the device: $kit/tests/gpu/run.sh OUT" >&2
