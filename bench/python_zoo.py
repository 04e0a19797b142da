"""Wall time and trials of each Python zoo case (issue #8), with the baselines measured in the
same run: one trial of the case's full failing configuration (what a reduction step costs at
most), and optionally (--ddmin) the textbook ddmin strategy on the same case.

Printed per case: trials, wall seconds, seconds per trial, the single full trial's seconds, and
wall / (trials x full trial): below 1 means the reduction's trials got cheaper than the original
(fewer ranks, samples, steps) faster than the driver added overhead.
usage: python_zoo.py DDPBISECT ZOO_DIR [NAME...] [--ddmin]"""
import json
import pathlib
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]
ddmin = "--ddmin" in args
args = [a for a in args if a != "--ddmin"]
binary, zoo, names = args[0], pathlib.Path(args[1]), set(args[2:])


def reduce(spec, tmp, strategy):
    start = time.time()
    cmd = [binary, str(spec), "--out", f"{tmp}/{strategy}", "--quiet", "--strategy", strategy]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - start
    if proc.returncode != 0:
        return None, wall
    return json.loads(pathlib.Path(f"{tmp}/{strategy}/report.json").read_text()), wall


print(f"{'case':20} {'trials':>6} {'wall s':>7} {'s/trial':>7} {'full s':>7} {'ratio':>6}"
      + (f" {'ddmin trials':>12} {'ddmin s':>8}" if ddmin else ""))
totals = [0, 0.0, 0, 0.0]
for spec in sorted(zoo.glob("*.yaml")):
    if names and spec.stem not in names:
        continue
    with tempfile.TemporaryDirectory() as tmp:
        report, wall = reduce(spec, tmp, "default")
        if report is None:
            print(f"{spec.stem:20} reduction failed")
            continue
        stage = report["original"]["stage"]
        start = time.time()
        subprocess.run([binary, "run", str(spec), "--stage", stage, "--out", f"{tmp}/one"],
                       capture_output=True)
        full = time.time() - start
        trials = report["trials"]["total"]
        line = (f"{spec.stem:20} {trials:6d} {wall:7.1f} {wall / trials:7.2f} {full:7.2f} "
                f"{wall / (trials * full):6.2f}")
        totals[0] += trials
        totals[1] += wall
        if ddmin:
            base, base_wall = reduce(spec, tmp, "ddmin")
            base_trials = base["trials"]["total"] if base else 0
            totals[2] += base_trials
            totals[3] += base_wall
            line += f" {base_trials:12d} {base_wall:8.1f}"
        print(line, flush=True)
print(f"{'total':20} {totals[0]:6d} {totals[1]:7.1f}"
      + (f"   default/ddmin: trials {totals[0] / max(totals[2], 1):.2f}x, "
         f"time {totals[1] / max(totals[3], 1e-9):.2f}x" if ddmin else ""))
