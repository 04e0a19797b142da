"""What a reduction of each Python zoo case costs against one full run of the failing job,
measured in the same run (issues #8 and #20).

Per case: trials, wall seconds of the reduction, seconds of one trial of the stage's full
configuration (`ddpbisect run`: what the user would pay to see the failure once), and
ratio = wall / full trial; then the median ratio. Targets (issue #20): median <= 12 with
--jobs 1; <= 6 with --jobs 4 on the waiting variant.

--wait START,STEP: the waiting variant, a copy of each case whose ranks sleep START seconds before
their first step and STEP seconds per batch (a dataset mount, remote storage: trials that mostly
wait, so that 2 cores can run four of them at once). A spec's fixed limits.hang_after grows by
START + STEP in the copy, as a user whose job waits so would set it: a rank that sleeps that
long before its first heartbeat, using next to no CPU (a warm start's), is otherwise taken for
hung. --jobs N: passed to the reduction.
--ddmin: also the textbook ddmin strategy, for its trials and time.
--preload MODS|auto: the reduction with warm starts (`workload.preload`); the full trial it is
divided by stays cold (what the user pays to see the failure once).
usage: python_zoo.py DDPBISECT ZOO_DIR [NAME...] [--jobs N] [--wait START,STEP] [--ddmin]
                     [--preload auto]"""
import json
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]


def flag(name, default=None):
    if name not in args:
        return default
    i = args.index(name)
    value = args[i + 1]
    del args[i : i + 2]
    return value


jobs = flag("--jobs", "1")
wait = flag("--wait")
preload = flag("--preload")
ddmin = "--ddmin" in args
args = [a for a in args if a != "--ddmin"]
binary, zoo, names = args[0], pathlib.Path(args[1]).resolve(), set(args[2:])


def variant(spec, tmp, warm=False):
    """The spec itself, or its copy (absolute cwd) with ZOO_WAIT in the workload's env (the
    waiting variant) and, when `warm`, `preload`."""
    if not wait and not (warm and preload):
        return spec
    text = spec.read_text()
    edited = text.replace("cwd: .\n", f"cwd: {spec.parent}\n")
    assert str(spec.parent) in edited, spec
    if wait:
        edited = edited.replace("env: {", f'env: {{ZOO_WAIT: "{wait}", ')
        assert edited.count("ZOO_WAIT") == 1, spec
        waits = sum(float(w) for w in wait.split(","))
        edited = re.sub(r"hang_after: ([0-9.]+)s",
                        lambda m: f"hang_after: {float(m.group(1)) + waits:g}s", edited)
    if warm and preload:
        listed = preload if preload == "auto" else f"[{preload}]"
        edited = edited.replace(f"cwd: {spec.parent}\n", f"cwd: {spec.parent}\n  preload: {listed}\n")
    copy = pathlib.Path(tmp) / (("warm-" if warm else "") + spec.name)
    copy.write_text(edited)
    return copy


def reduce(spec, tmp, strategy):
    start = time.time()
    cmd = [binary, str(spec), "--out", f"{tmp}/{strategy}", "--quiet", "--strategy", strategy,
           "--jobs", jobs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - start
    if proc.returncode != 0:
        return None, wall
    return json.loads(pathlib.Path(f"{tmp}/{strategy}/report.json").read_text()), wall


def full_trial(spec, tmp, stage):
    start = time.time()
    subprocess.run([binary, "run", str(spec), "--stage", stage, "--out", f"{tmp}/one"],
                   capture_output=True)
    return time.time() - start


def minimum(report):
    m = report["minimal"]
    return (f"{m['nodes']}x{m['procs_per_node']} s={m['sample_indices']} "
            f"c={','.join(m['components'])} f={','.join(m['features'])} "
            f"steps={m['params'].get('steps')} bs={m['params'].get('batch_size')}")


print(f"jobs {jobs}" + (f", waiting variant {wait}" if wait else "")
      + (f", preload {preload}" if preload else ""))
print(f"{'case':20} {'trials':>6} {'wall s':>7} {'full s':>7} {'ratio':>6}"
      + (f" {'ddmin trials':>12} {'ddmin s':>8}" if ddmin else "") + "  minimum")
ratios = []
for spec in sorted(zoo.glob("*.yaml")):
    if names and spec.stem not in names:
        continue
    with tempfile.TemporaryDirectory() as tmp:
        case = variant(spec, tmp)
        report, wall = reduce(variant(spec, tmp, warm=True), tmp, "default")
        if report is None:
            print(f"{spec.stem:20} reduction failed", flush=True)
            continue
        full = full_trial(case, tmp, report["original"]["stage"])
        ratios.append(wall / full)
        line = (f"{spec.stem:20} {report['trials']['total']:6d} {wall:7.1f} {full:7.2f} "
                f"{wall / full:6.1f}")
        if ddmin:
            base, base_wall = reduce(case, tmp, "ddmin")
            line += f" {base['trials']['total'] if base else 0:12d} {base_wall:8.1f}"
        print(line + "  " + minimum(report), flush=True)
if ratios:
    print(f"median wall / full trial: {statistics.median(ratios):.1f}")
