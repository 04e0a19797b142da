#!/usr/bin/env bash
# `ddpbisect explain` on a large synthetic log (NCCL INFO chatter, a traceback near the end)
# against `grep -E` with the classifier's key patterns on the same file, in the same run.
# Two logs: "plain" ([rankN]: tags, as torchrun's --tee writes them) and "prefixed" (every line
# behind a logger's timestamp and level columns and a host:rank tag, the failing rank's traceback
# interleaved line by line with other ranks' chatter), each against grep on the same file.
# Targets: at least 0.5x grep's throughput, peak RSS at most 64 MB, on each.
# Usage: bench/explain_throughput.sh [BUILD_DIR] [MEGABYTES]
set -euo pipefail
build=${1:-build} mb=${2:-512}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
make_log() {  # PATH STYLE
/usr/bin/python3 - "$1" "$mb" "$2" <<'PY'
import sys
path, mb, style = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def tag(r, i):
    if style == "plain":
        return f"[rank{r}]:"
    return f"2024-05-01 12:{i // 60 % 60:02d}:{i % 60:02d},{i % 1000:03d} - INFO - gpu-node-{r // 8}:{r} | "
chunk = "".join(
    f"{tag(r, c * 64 + r)}gpu-node-{r // 8}:{4100 + r}:{4200 + r} [{r % 8}] NCCL INFO Channel {c:02d}/32 : {r} -> {(r + 1) % 64} via P2P/IPC/read\n"
    for c in range(32) for r in range(64)
).encode()
traceback = ["Traceback (most recent call last):",
             '  File "/job/train.py", line 210, in <module>', "    main()",
             '  File "/job/train.py", line 188, in main', "    batch = next(loader)",
             '  File "/job/data.py", line 77, in fetch', "    return self.cache[key]",
             "KeyError: 'sample-88123'"]
lines = []
for i, text in enumerate(traceback):
    lines.append(tag(13, i) + text)
    if style != "plain":  # another rank's chatter inside the traceback
        lines.append(tag(40 + i, i) + f"gpu-node-5:{4140 + i} NCCL INFO comm 0x7f{i:02x} rank {40 + i} nranks 64 - Init COMPLETE")
lines.append(tag(0, 99) + "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, remote process exited or there was a network error, NCCL version 2.18.1")
tail = ("\n".join(lines) + "\n").encode()
with open(path, "wb") as f:
    written = 0
    while written < mb << 20:
        f.write(chunk)
        written += len(chunk)
    f.write(tail)
    f.write(chunk[:200000])
PY
}
patterns='Traceback|Error|Exception|Fatal|terminate called|what\(\)|Watchdog|[Tt]imed out|Connection|Signal|exitcode|Root Cause|NCCL WARN|out of memory|Expected|Detected|Thread 0x|CUDA|Aborted|Segmentation'
now() { date +%s.%N; }
bench() {  # STYLE
  local log=$tmp/$1.log
  make_log "$log" "$1"
  local size; size=$(stat -c %s "$log")
  cat "$log" >/dev/null  # both read from the page cache
  local s e grep_s explain_s rss_mb
  s=$(now); grep -E -c "$patterns" "$log" >/dev/null; e=$(now)
  grep_s=$(echo "$e - $s" | bc -l)
  s=$(now); /usr/bin/time -f "%M" -o "$tmp/rss" "$build/ddpbisect" explain --json "$log" >"$tmp/out.json"; e=$(now)
  explain_s=$(echo "$e - $s" | bc -l)
  rss_mb=$(echo "$(cat "$tmp/rss") / 1024" | bc -l)
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['root_cause']; assert (r['rank'], r['exception'], r['frames'][-1]['file']) == (13, 'KeyError', '/job/data.py'), r" "$tmp/out.json"
  printf '%s log: %.0f MB\n' "$1" "$(echo "$size / 1048576" | bc -l)"
  printf '  grep -E             %6.2f s  %7.0f MB/s\n' "$grep_s" "$(echo "$size / 1048576 / $grep_s" | bc -l)"
  printf '  ddpbisect explain   %6.2f s  %7.0f MB/s  (root cause found: rank 13 KeyError in data.py)\n' "$explain_s" "$(echo "$size / 1048576 / $explain_s" | bc -l)"
  printf '  throughput ratio    %6.2fx of grep (target >= 0.5x)\n' "$(echo "$grep_s / $explain_s" | bc -l)"
  printf '  peak RSS            %6.1f MB (target <= 64 MB)\n' "$rss_mb"
  rm -f "$log"
}
bench plain
bench prefixed
