#!/usr/bin/env bash
# Issue 31: the GPU kit (scripts/gpu-kit.sh), checked where there is no GPU. The kit's ddpbisect
# runs through its own loader and libraries from another folder and finds the kit's helpers and
# agent; a real trial runs through it (the isolation helper, the agent); every library the
# programs load is in the kit; a worker built elsewhere is accepted for `device: cuda` only when
# declared (DDPBISECT_WORKER_CUDA=1); tests/gpu/run.sh in the kit says "skipped: no GPU" and
# exits 77; doctor reports a fake nvidia-smi's driver; an existing folder that is not a kit is
# never overwritten.
# Usage: gpu_kit.sh BUILD_DIR REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
build=$(realpath "$1")
root=$(realpath "$2")
tmp=$(mktemp -d)
[[ -n ${KEEP:-} ]] || at_exit rm -rf "$tmp"
kit=$tmp/kit
bash "$root/scripts/gpu-kit.sh" "$build" "$kit" >"$tmp/kit.log" 2>&1 ||
  { bad "gpu-kit.sh failed: $(tail -3 "$tmp/kit.log")"; finish gpu/kit; exit 1; }
[[ -f $kit/KIT && -x $kit/prefix/bin/ddpbisect && -x $kit/lib/ld-linux-x86-64.so.2 &&
   -x $kit/tests/gpu/run.sh && -f $kit/src/CMakeLists.txt && -f $kit/src/src/worker/main.cpp ]] &&
  ok || bad "the kit lacks a file: $(cd "$kit" && find . -maxdepth 2 | sort | xargs)"

# Every library a kit program loads is in the kit.
for p in "$kit"/real/*; do
  for lib in $(ldd "$p" | awk '/=> \// {print $3}'); do
    [[ -f $kit/lib/$(basename "$lib") ]] || bad "$(basename "$p") loads $lib, not in the kit"
  done
done
ok

mkdir -p "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
v=$(env -u DDPBISECT_ISOLATE -u DDPBISECT_WARM -u DDPBISECT_AGENT_DIR "$kit/prefix/bin/ddpbisect" --version)
grep -q "^isolate: $kit/prefix/libexec/ddpbisect/ddpbisect-isolate$" <<<"$v" &&
  grep -q "^agent:   $kit/prefix/share/ddpbisect/python/agent$" <<<"$v" && ok ||
  bad "the kit's ddpbisect does not use the kit's helpers: $v"

# A real trial through the kit: a command whose rank 1 fails.
cat >spec.yaml <<'EOS'
version: 1
workload:
  command: [python3, -c, "import os, sys, time; r = int(os.environ['RANK']); time.sleep(r); sys.exit(r * 3)"]
  preload: none
stages: [{name: node, nodes: 1, procs_per_node: 2}]
limits: {trial_timeout: 60s}
EOS
"$kit/prefix/bin/ddpbisect" run spec.yaml --out run --json >run.json 2>run.err
rc=$?
py '
import json, sys
j = json.load(open("run.json"))
codes = sorted((r["rank"], r["exit_code"]) for r in j["ranks"])
assert codes == [(0, 0), (1, 3)], codes
' && [[ $rc != 2 && $rc != 70 ]] && ok || bad "a trial through the kit: exit $rc, $(tail -3 run.err)"

# A worker built elsewhere for CUDA is accepted only when declared.
sed -e 's/^stages:$/stages: [{name: single, nodes: 1, procs_per_node: 1, device: cuda}]/' \
  -e '/^  - {name:/d' "$root/configs/demo.yaml" >cuda.yaml
if "$kit/prefix/bin/ddpbisect" validate cuda.yaml >/dev/null 2>&1; then
  echo "this build's worker has CUDA: the declaration is not needed"
else
  DDPBISECT_WORKER=/bin/true DDPBISECT_WORKER_CUDA=1 "$kit/prefix/bin/ddpbisect" validate cuda.yaml \
    >/dev/null 2>validate.err && ok || bad "a declared CUDA worker is refused: $(cat validate.err)"
  DDPBISECT_WORKER_CUDA=1 "$kit/prefix/bin/ddpbisect" validate cuda.yaml >/dev/null 2>&1 &&
    bad "DDPBISECT_WORKER_CUDA=1 without DDPBISECT_WORKER was accepted" || ok
fi

# No GPU here: the device checks skip at once, and say so.
if ! nvidia-smi -L >/dev/null 2>&1; then
  out=$("$kit/tests/gpu/run.sh" "$tmp/gpu-out" 2>&1)
  rc=$?
  [[ $rc == 77 && $out == "skipped: no GPU"* ]] && ok || bad "tests/gpu/run.sh without a GPU: exit $rc, $out"
fi

# GPU logic without a GPU: a fake nvidia-smi on PATH is what doctor reports as the driver.
mkdir -p fake
cat >fake/nvidia-smi <<'EOS'
#!/bin/sh
case "$*" in
  *driver_version*) echo "575.57.08" ;;
  -L) echo "GPU 0: NVIDIA H200 (UUID: GPU-fake)" ;;
  *) echo "NVIDIA-SMI 575.57.08" ;;
esac
EOS
chmod +x fake/nvidia-smi
PATH=$PWD/fake:$PATH "$kit/prefix/bin/ddpbisect" doctor spec.yaml --no-comm --no-sanity --json \
  --out doc >doctor.json 2>doctor.err
py 'import json; j = json.load(open("doctor.json")); s = json.dumps(j); assert "\"gpu_driver\": \"575.57.08\"" in s, s[:400]' &&
  ok || bad "doctor did not report the fake nvidia-smi's driver: $(tail -3 doctor.err)"

# A folder that is not a kit is never overwritten.
mkdir -p "$tmp/precious" && echo keep >"$tmp/precious/data"
bash "$root/scripts/gpu-kit.sh" "$build" "$tmp/precious" >/dev/null 2>&1 &&
  bad "gpu-kit.sh overwrote a folder that is not a kit" ||
  { [[ $(cat "$tmp/precious/data") == keep ]] && ok || bad "gpu-kit.sh destroyed $tmp/precious"; }
finish gpu/kit
