#!/usr/bin/env bash
# `ddpbisect explain` on a large synthetic log (NCCL INFO chatter, a traceback near the end)
# against `grep -E` with the classifier's key patterns on the same file, in the same run.
# Targets: at least 0.5x grep's throughput, peak RSS at most 64 MB.
# Usage: bench/explain_throughput.sh [BUILD_DIR] [MEGABYTES]
set -euo pipefail
build=${1:-build} mb=${2:-512}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
log=$tmp/console.log
/usr/bin/python3 - "$log" "$mb" <<'PY'
import sys
path, mb = sys.argv[1], int(sys.argv[2])
chunk = "".join(
    f"[rank{r}]:gpu-node-{r // 8}:{4100 + r}:{4200 + r} [{r % 8}] NCCL INFO Channel {c:02d}/32 : {r} -> {(r + 1) % 64} via P2P/IPC/read\n"
    for c in range(32) for r in range(64)
).encode()
tail = b"""[rank13]:Traceback (most recent call last):
[rank13]:  File "/job/train.py", line 210, in <module>
[rank13]:    main()
[rank13]:  File "/job/train.py", line 188, in main
[rank13]:    batch = next(loader)
[rank13]:  File "/job/data.py", line 77, in fetch
[rank13]:    return self.cache[key]
[rank13]:KeyError: 'sample-88123'
[rank0]:RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1275, remote process exited or there was a network error, NCCL version 2.18.1
"""
with open(path, "wb") as f:
    written = 0
    while written < mb << 20:
        f.write(chunk)
        written += len(chunk)
    f.write(tail)
    f.write(chunk[:200000])
PY
size=$(stat -c %s "$log")
patterns='Traceback|Error|Exception|Fatal|terminate called|what\(\)|Watchdog|[Tt]imed out|Connection|Signal|exitcode|Root Cause|NCCL WARN|out of memory|Expected|Detected|Thread 0x|CUDA|Aborted|Segmentation'
cat "$log" >/dev/null  # both read from the page cache
now() { date +%s.%N; }
s=$(now); grep -E -c "$patterns" "$log" >/dev/null; e=$(now)
grep_s=$(echo "$e - $s" | bc -l)
s=$(now); /usr/bin/time -f "%M" -o "$tmp/rss" "$build/ddpbisect" explain --json "$log" >"$tmp/out.json"; e=$(now)
explain_s=$(echo "$e - $s" | bc -l)
rss_mb=$(echo "$(cat "$tmp/rss") / 1024" | bc -l)
/usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['root_cause']; assert (r['rank'], r['exception']) == (13, 'KeyError'), r" "$tmp/out.json"
printf 'log: %.0f MB\n' "$(echo "$size / 1048576" | bc -l)"
printf '  grep -E             %6.2f s  %7.0f MB/s\n' "$grep_s" "$(echo "$size / 1048576 / $grep_s" | bc -l)"
printf '  ddpbisect explain   %6.2f s  %7.0f MB/s  (root cause found: rank 13 KeyError)\n' "$explain_s" "$(echo "$size / 1048576 / $explain_s" | bc -l)"
printf '  throughput ratio    %6.2fx of grep (target >= 0.5x)\n' "$(echo "$grep_s / $explain_s" | bc -l)"
printf '  peak RSS            %6.1f MB (target <= 64 MB)\n' "$rss_mb"
