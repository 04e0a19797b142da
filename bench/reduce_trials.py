"""Trials the reducer needs on the zoo: the default strategy vs. --strategy ddmin (textbook ddmin,
flattened) vs. the information lower bound, measured in one run.

The lower bound of a reduction is the sum over dimensions of log2 of the number of outcomes it had
to tell apart: for a set, log2 C(n, k) (which k of the n items are the culprits); for an integer
searched in 1..n, log2 n; for the topology, log2 of the shapes no larger than the original. Trials
counted: those of the passes (escalation and the reproduction-rate reruns are the same for both
strategies and are left out). Targets: default <= 0.5x ddmin in total, <= 3x the lower bound.

Each minimum is checked against the zoo's `# expect:` line. Where only the kept sample differs
and the count is the planted one (any sample fails, and ddmin keeps a different one than the
default strategy), the row says so: both are 1-minimal, neither is wrong.
usage: reduce_trials.py DDPBISECT ZOO_DIR [NAME...]"""
import json
import math
import pathlib
import subprocess
import sys
import tempfile

binary, zoo, names = sys.argv[1], pathlib.Path(sys.argv[2]), set(sys.argv[3:])


def lower_bound(report):
    o, m = report["original"], report["minimal"]
    bits = math.log2(o["nodes"] * o["procs_per_node"])
    bits += math.log2(math.comb(o["samples"], m["samples"]))
    for key in ("components", "features"):
        bits += math.log2(math.comb(len(o[key]), len(m[key])))
    for name, value in o["params"].items():
        if value > 1:
            bits += math.log2(value)
    return bits


def expectation(spec):
    for line in spec.read_text().splitlines():
        if line.startswith("# expect:"):
            return dict(item.partition("=")[::2] for item in line.split(":", 1)[1].split())
    return {}


def mismatches(report, expect):
    """The keys of the zoo's expectation this minimum misses, as 'key=got'."""
    m = report["minimal"]
    got = {"nodes": str(m["nodes"]), "procs_per_node": str(m["procs_per_node"]),
           "samples": m["sample_indices"], "sample_count": str(m["samples"]),
           "components": ",".join(m["components"]), "features": ",".join(m["features"]),
           "steps": str(m["params"].get("steps")), "batch_size": str(m["params"].get("batch_size"))}
    miss = []
    for k, want in expect.items():
        if k in ("components", "features") and want.isdigit():  # a count: which ones is free
            if len(m[k]) != int(want):
                miss.append(f"{k}={got[k]}")
        elif k in got and got[k] != want:
            miss.append(f"{k}={got[k]}")
    return miss


def verdict(report, expect):
    miss = mismatches(report, expect)
    if not miss:
        return "as expected"
    planted = expect.get("samples", "")
    count = len(planted.split(",")) if planted else 0
    if len(miss) == 1 and miss[0].startswith("samples=") and report["minimal"]["samples"] == count:
        return f"other sample ({miss[0]})"
    return "WRONG " + " ".join(miss)


def reduce(spec, strategy):
    with tempfile.TemporaryDirectory() as tmp:
        # With the default confirmation: a flaky failure that every measuring rerun reproduced is
        # found flaky there, and reduced again with repeats, as a user's run would.
        subprocess.run([binary, str(spec), "--out", tmp, "--quiet", "--strategy", strategy],
                       check=True, capture_output=True)
        r = json.loads((pathlib.Path(tmp) / "report.json").read_text())
        return r, r["trials"]["reduction"] - r["trials"]["escalation"]


rows, totals = [], [0, 0, 0.0]
print(f"{'zoo spec':22} {'default':>8} {'ddmin':>8} {'bound':>8}  minimum: default / ddmin")
wrong = 0
for spec in sorted(zoo.glob("*.yaml")):
    if names and spec.stem not in names:
        continue
    rd, td = reduce(spec, "default")
    rb, tb = reduce(spec, "ddmin")
    bound = lower_bound(rd)
    expect = expectation(spec)
    vd, vb = verdict(rd, expect), verdict(rb, expect)
    wrong += vd.startswith("WRONG") + vb.startswith("WRONG")
    print(f"{spec.stem:22} {td:8d} {tb:8d} {bound:8.1f}  {vd} / {vb}", flush=True)
    totals[0] += td
    totals[1] += tb
    totals[2] += bound
print(f"{'total':22} {totals[0]:8d} {totals[1]:8d} {totals[2]:8.1f}")
print(f"default / ddmin       = {totals[0] / totals[1]:.2f} (target <= 0.5)")
print(f"default / lower bound = {totals[0] / totals[2]:.2f} (target <= 3)")
print(f"wrong minima          = {wrong} (target 0)")
sys.exit(1 if wrong else 0)
