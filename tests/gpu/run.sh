#!/usr/bin/env bash
# Issue 31: the GPU path, checked on a real GPU in one run of at most 8 minutes. Each check runs
# the real ddpbisect on a real spec and reads what it wrote:
#   oom       a Python workload on `device: cuda`, a CUDA OOM from step 3: reduced to 1 rank and
#             4 steps, category cuda_oom
#   assert    a device-side assert (a class index past the last into nll_loss): category
#             cuda_error, and the CUDA_LAUNCH_BLOCKING=1 debug rerun names the user's line
#   nccl      two NCCL ranks on the one GPU (NCCL refuses): diagnosed as nccl_error, not as a
#             Python exception, with its rank
#   worker    ddpbisect-worker built against this machine's CUDA libtorch, one `device: cuda`
#             trial of the built-in trainer with a planted fault: found
#   doctor    `ddpbisect doctor` (the GPU inventory, driver, CUDA and NCCL versions) and
#             `--jobs auto` sized to the node's devices
# It writes OUT/summary.txt (each check pass/fail/skip and its seconds, the GPU) and keeps every
# trial folder under OUT. Where there is no GPU (CI) it exits 77 "skipped: no GPU" at once.
#
# usage: tests/gpu/run.sh [OUT_DIR] [CHECK...]   ddpbisect: $DDPBISECT, else the kit's (when run
# from a kit made by scripts/gpu-kit.sh), else the build tree's, else PATH's.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$PWD/gpu-out}
shift || true
checks=("$@")
((${#checks[@]})) || checks=(oom assert nccl worker doctor)

gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
if [[ -z $gpu ]] || ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "skipped: no GPU (nvidia-smi: ${gpu:-none}; torch.cuda.is_available() false or no torch)"
  exit 77
fi

kit=$here
while [[ ! -f $kit/KIT && $kit != / ]]; do kit=$(dirname "$kit"); done
if [[ -n ${DDPBISECT:-} ]]; then
  bin=$DDPBISECT
elif [[ -f $kit/KIT ]]; then
  bin=$kit/prefix/bin/ddpbisect
elif [[ -x $here/../../build/ddpbisect ]]; then
  bin=$here/../../build/ddpbisect
else
  bin=$(command -v ddpbisect) || { echo "no ddpbisect (set DDPBISECT)" >&2; exit 2; }
fi
[[ -e $out && ! -f $out/summary.txt ]] && { echo "$out exists and is not a gpu run's folder: not overwriting it" >&2; exit 2; }
rm -rf "$out"
mkdir -p "$out"
summary=$out/summary.txt
echo "gpu: $gpu" >"$summary"
echo "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1)" >>"$summary"
echo "ddpbisect: $bin" >>"$summary"
failed=0
export bin here out kit

# run_check NAME FUNCTION: its pass/fail and seconds into the summary; a check's own time limit
# keeps the whole run inside the device's minutes.
run_check() {
  local name=$1 t0=$SECONDS rc
  mkdir -p "$out/$name"
  (cd "$out/$name" && timeout -k 5 "$2" bash -c "$(declare -f json spec "check_$name"); check_$name") \
    >"$out/$name/check.log" 2>&1
  rc=$?
  local verdict=pass
  ((rc == 77)) && verdict=skip
  ((rc != 0 && rc != 77)) && verdict=fail && failed=1
  printf '%-8s %-5s %4d s  %s\n' "$name" "$verdict" $((SECONDS - t0)) \
    "$(tail -1 "$out/$name/check.log")" | tee -a "$summary"
}

# json FILE EXPR: EXPR (Python, `j` the file's JSON) must be true; else the check fails.
json() {
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if not eval(sys.argv[2]):
    sys.exit(f"not true of {sys.argv[1]}: {sys.argv[2]}")
PY
}

spec() {  # spec FILE COMMAND-LIST PARAMS STAGES
  cat >"$1" <<EOS
version: 1
workload:
  command: $2
  cwd: $here
  params: $3
stages: $4
limits: {trial_timeout: 90s}
EOS
}

check_oom() {
  spec oom.yaml "[python3, cuda_oom.py, \"{steps}\", \"3\"]" "{steps: 8}" \
    "[{name: single, nodes: 1, procs_per_node: 1, device: cuda}]"
  "$bin" oom.yaml --out red --quiet --confirm 1 || { echo "the reduction exited $?"; return 1; }
  json red/report.json 'j["minimal"]["world_size"] == 1 and j["minimal"]["params"]["steps"] == 4' &&
    json red/report.json 'j["signature"]["category"] == "cuda_oom"' && echo "cuda_oom at 1 rank, 4 steps"
}

check_assert() {
  spec assert.yaml "[python3, device_assert.py, \"{steps}\", \"2\"]" "{steps: 6}" \
    "[{name: single, nodes: 1, procs_per_node: 1, device: cuda}]"
  "$bin" assert.yaml --out red --quiet --confirm 1 || { echo "the reduction exited $?"; return 1; }
  json red/report.json 'j["signature"]["category"] == "cuda_error"' || return 1
  # The debug rerun (CUDA_LAUNCH_BLOCKING=1) points at the nll_loss line.
  local line
  line=$(grep -n "gpu-check: the culprit line" "$here/device_assert.py" | cut -d: -f1)
  grep -rqs "CUDA_LAUNCH_BLOCKING" red/report.md || { echo "no CUDA_LAUNCH_BLOCKING rerun in report.md"; return 1; }
  grep -qs "device_assert.py:$line\|device_assert.py\", line $line" red/report.md red/report.json ||
    { echo "the report does not name device_assert.py:$line"; return 1; }
  echo "cuda_error at device_assert.py:$line"
}

check_nccl() {
  spec nccl.yaml "[python3, nccl_same_gpu.py]" "{}" \
    "[{name: node, nodes: 1, procs_per_node: 2, device: cuda}]"
  "$bin" run nccl.yaml --out run --json >run.json
  json run.json '(j.get("diagnosis") or j)["signature"]["category"] == "nccl_error"' ||
    { echo "not diagnosed as nccl_error"; return 1; }
  echo "nccl_error"
}

check_worker() {
  command -v c++ >/dev/null || command -v g++ >/dev/null || { echo "skipped: no C++ compiler here"; return 77; }
  local src=$kit/src sys=$out/worker/sysroot prefix
  [[ -d $src ]] || src=$here/../..
  # The kit's Debian packages, unpacked without root, where the image lacks the tools.
  if [[ -d $kit/debs ]]; then
    mkdir -p "$sys"
    for d in "$kit"/debs/*.deb; do dpkg -x "$d" "$sys"; done
    export PATH=$sys/usr/bin:$PATH LD_LIBRARY_PATH=$sys/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export CMAKE_PREFIX_PATH=$sys/usr PKG_CONFIG_PATH=$sys/usr/lib/x86_64-linux-gnu/pkgconfig:$sys/usr/share/pkgconfig
  fi
  command -v cmake >/dev/null || { echo "skipped: no cmake (make the kit with --debs)"; return 77; }
  prefix=$(python3 -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')
  cmake -S "$src" -B build -DCMAKE_BUILD_TYPE=Release -DDDPBISECT_BUILD_TESTS=OFF \
    -DCMAKE_PREFIX_PATH="$prefix;${CMAKE_PREFIX_PATH:-}" >cmake.log 2>&1 || { tail -5 cmake.log; return 1; }
  cmake --build build -j"$(nproc)" --target ddpbisect-worker >build.log 2>&1 || { tail -5 build.log; return 1; }
  sed -e 's/^stages:$/stages: [{name: single, nodes: 1, procs_per_node: 1, device: cuda}]/' \
    -e '/^  - {name:/d' -e 's/min_world_size: 2, //' -e 's/ranks: \[1\], //' \
    "$src/configs/demo.yaml" >demo.yaml
  DDPBISECT_WORKER=$PWD/build/ddpbisect-worker DDPBISECT_WORKER_CUDA=1 "$bin" run demo.yaml --out run --json >run.json
  json run.json '(j.get("diagnosis") or j)["signature"]["category"] == "python_exception" or "planted" in json.dumps(j)' ||
    { echo "the planted fault was not found"; return 1; }
  echo "worker built for CUDA; the planted fault found on device: cuda"
}

check_doctor() {
  spec doc.yaml "[python3, cuda_oom.py, \"2\", \"9\"]" "{}" \
    "[{name: single, nodes: 1, procs_per_node: 1, device: cuda}]"
  "$bin" doctor doc.yaml --json >doctor.json 2>doctor.err
  grep -qi "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" doctor.json ||
    { echo "doctor does not name the GPU"; return 1; }
  grep -qi "nccl" doctor.json || { echo "doctor says nothing of NCCL"; return 1; }
  # --jobs auto on one GPU: trials of `device: cuda` stages never overlap on it.
  spec jobs.yaml "[python3, cuda_oom.py, \"{steps}\", \"3\"]" "{steps: 6}" \
    "[{name: single, nodes: 1, procs_per_node: 1, device: cuda}]"
  "$bin" jobs.yaml --jobs auto --out jobs --quiet || { echo "--jobs auto exited $?"; return 1; }
  local most
  most=$(python3 - jobs "$(nvidia-smi -L | wc -l)" <<'PY'
import glob, json, sys
spans = []
for f in glob.glob(sys.argv[1] + "/trials/*/outcome.json"):
    o = json.load(open(f))
    spans.append((o["started_unix"], o["started_unix"] + o["duration_s"]))
most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
print(most)
sys.exit(0 if most <= int(sys.argv[2]) else 1)
PY
) || { echo "--jobs auto ran $most CUDA trials at once on $(nvidia-smi -L | wc -l) GPU(s)"; return 1; }
  echo "doctor names the GPU and NCCL; --jobs auto ran at most $most CUDA trial(s) at once"
}

for c in "${checks[@]}"; do
  case $c in
  worker) run_check worker 300 ;;
  *) run_check "$c" 150 ;;
  esac
done
echo "gpu checks: $( ((failed)) && echo FAILED || echo passed) (details: $summary)" | tee -a "$summary"
exit $failed
