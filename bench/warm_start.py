"""Warm starts (`workload.preload`, issue #20), measured in one run: each Python zoo case reduced
cold and with `preload: auto`, one after the other.

Per case and mode: trials, wall seconds, and the time from a trial's start to its rank 0's first
optimizer step (the agent's first heartbeat, `t`, less the trial's `started_unix`), median over
the reduction's trials that took a step; then whether both modes reached the same minimum.
Last line: the medians over cases of the first-step times and of wall cold / wall warm.
usage: python3 bench/warm_start.py DDPBISECT ZOO_DIR [NAME...]"""
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

binary, zoo = str(pathlib.Path(sys.argv[1]).resolve()), pathlib.Path(sys.argv[2]).resolve()
names = set(sys.argv[3:])
HEARTBEAT = re.compile(r'DDPBISECT_HEARTBEAT \{"rank":0,"step":\d+,"t":([0-9.]+)')


def copy(spec, tmp, preload):
    text = spec.read_text().replace("  cwd: .\n", f"  cwd: {spec.parent}\n"
                                    + ("  preload: auto\n" if preload else ""))
    out = pathlib.Path(tmp) / spec.name
    out.write_text(text)
    return out


def first_steps(out):
    times = []
    for outcome in sorted(out.glob("trials/*/outcome.json")):
        o = json.loads(outcome.read_text())
        for rank in o["ranks"]:
            if rank["rank"] != 0:
                continue
            text = ""
            for key in ("stdout", "stderr"):
                path = pathlib.Path(rank[key])
                path = path if path.is_absolute() else out.parent / path
                if path.exists():
                    text += path.read_text(errors="replace")
            m = HEARTBEAT.search(text)
            if m:
                times.append(float(m.group(1)) - o["started_unix"])
    return times


def reduce(spec, tmp, preload):
    out = pathlib.Path(tmp) / ("warm" if preload else "cold")
    start = time.time()
    proc = subprocess.run([binary, str(copy(spec, tmp, preload)), "--out", str(out), "--quiet"],
                          capture_output=True, text=True, cwd=tmp)
    wall = time.time() - start
    if proc.returncode != 0:
        return None
    report = json.loads((out / "report.json").read_text())
    m = report["minimal"]
    minimum = (m["nodes"], m["procs_per_node"], m["sample_indices"], tuple(m["components"]),
               tuple(m["features"]), tuple(sorted(m["params"].items())))
    return report["trials"]["total"], wall, first_steps(out), minimum


print(f"{'case':18} {'trials':>11} {'wall s':>13} {'first step s (median)':>22}  same minimum")
print(f"{'':18} {'cold':>5} {'warm':>5} {'cold':>6} {'warm':>6} {'cold':>10} {'warm':>10}")
firsts_cold, firsts_warm, speedups = [], [], []
for spec in sorted(zoo.glob("*.yaml")):
    if (names and spec.stem not in names) or (not names and spec.stem == "flaky"):
        continue
    with tempfile.TemporaryDirectory() as tmp:
        cold = reduce(spec, tmp, False)
        warm = reduce(spec, tmp, True)
    if cold is None or warm is None:
        print(f"{spec.stem:18} reduction failed ({'cold' if cold is None else 'warm'})", flush=True)
        continue
    fc = statistics.median(cold[2]) if cold[2] else float("nan")
    fw = statistics.median(warm[2]) if warm[2] else float("nan")
    if cold[2] and warm[2]:
        firsts_cold.append(fc)
        firsts_warm.append(fw)
    speedups.append(cold[1] / warm[1])
    print(f"{spec.stem:18} {cold[0]:5d} {warm[0]:5d} {cold[1]:6.1f} {warm[1]:6.1f} {fc:10.2f} "
          f"{fw:10.2f}  {'yes' if cold[3] == warm[3] else 'NO: ' + str(cold[3]) + ' vs ' + str(warm[3])}",
          flush=True)
if firsts_cold:
    print(f"median first step: cold {statistics.median(firsts_cold):.2f} s, warm "
          f"{statistics.median(firsts_warm):.2f} s; median wall cold / warm "
          f"{statistics.median(speedups):.1f}x")
