"""Trust, measured (issue #25): correct jobs must never be reported failing, on a quiet machine or
beside busy processes, and real hangs must still be declared fast with their culprit named.

Correct jobs, each reduced with the real binary (`ddpbisect SPEC`) with 0, 2 and 4 busy-loop
processes beside it: every Python zoo script with its bug switched off (ZOO_BUG=off), the
correct-job zoo (a silent evaluation phase, a large checkpoint between steps, a 10 s exit, 20 s
imports, mp.spawn, torch.distributed.launch), an evaluation of 30 s every 10 steps, the same
evaluation under the user's own torchrun, and the built-in trainer without a fault. A reduction
that does not exit 3 ("no stage failed") is a false failure.

Real hangs (bench/hangs/*.yaml), one trial each (`ddpbisect run`) at every load: the time from
the last progress of any rank to the hang's declaration (target: <= 5 s quiet, <= 15 s at 4
hogs) and whether the culprit the spec's `# expect: culprit=N` names was named.

Prints one line per run, then per load level: false failures / reductions, and the hangs'
declaration delays. Exit 1 on any false failure or a hang missed.
usage: false_failures.py DDPBISECT [--loads 0,2,4] [--only NAME,...] [--skip NAME,...]"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
args = sys.argv[1:]


def option(name, default):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i : i + 2]
        return value
    return default


loads = [int(x) for x in option("--loads", "0,2,4").split(",")]
only = set(filter(None, option("--only", "").split(",")))
skip = set(filter(None, option("--skip", "").split(",")))
binary = str(pathlib.Path(args[0]).resolve())


def copy_with(spec, tmp, name, env=None, replace=()):
    """A copy of a spec in `tmp` whose cwd is absolute, with added env and text replacements."""
    text = spec.read_text()
    cwd = re.search(r"^  cwd: (.*)$", text, re.M)
    folder = (spec.parent / (cwd.group(1).strip() if cwd else ".")).resolve()
    text = re.sub(r"^  cwd: .*$", f"  cwd: {folder}", text, flags=re.M)
    for old, new in replace:
        assert old in text, f"{spec}: no {old!r}"
        text = text.replace(old, new)
    if env:
        items = ", ".join(f"{k}: {json.dumps(v)}" for k, v in env.items())
        if re.search(r"^  env: \{", text, re.M):
            text = re.sub(r"^  env: \{", "  env: {" + items + ", ", text, count=1, flags=re.M)
        else:
            text = text.replace(f"  cwd: {folder}\n", f"  cwd: {folder}\n  env: {{{items}}}\n")
    out = pathlib.Path(tmp) / f"{name}.yaml"
    out.write_text(text)
    return out


def correct_jobs(tmp):
    jobs = []
    for spec in sorted((ROOT / "tests/zoo/python").glob("*.yaml")):
        jobs.append((f"zoo-{spec.stem}", copy_with(spec, tmp, spec.stem, {"ZOO_BUG": "off"})))
    for spec in sorted((ROOT / "tests/zoo/correct").glob("*.yaml")) + \
            sorted((ROOT / "bench/correct").glob("*.yaml")):
        jobs.append((spec.stem, copy_with(spec, tmp, spec.stem)))
    evaluate = ROOT / "tests/zoo/correct/evaluate.yaml"
    jobs.append(("evaluate-30s", copy_with(evaluate, tmp, "evaluate30", replace=[
        ('--eval-every, "10"]', '--eval-every, "10", --eval-seconds, "30"]')])))
    jobs.append(("torchrun-evaluate", copy_with(evaluate, tmp, "torchrun", replace=[
        ("command: [python3, evaluate.py,",
         "command: [torchrun, --nproc-per-node, \"2\", evaluate.py,")])))
    builtin = pathlib.Path(tmp) / "builtin.yaml"
    builtin.write_text(
        "version: 1\nname: builtin-correct\nworkload:\n  builtin:\n"
        "    model: [embedding, linear, layernorm, dropout, head]\n"
        "    dataset: {kind: synthetic, samples: 512, seed: 1}\n"
        "    features: [grad_clip, checkpoint, eval]\n"
        "    params: {steps: 40, batch_size: 16, eval_every: 10}\n"
        "stages:\n  - {name: single, nodes: 1, procs_per_node: 1}\n"
        "  - {name: node, nodes: 1, procs_per_node: 2}\n")
    jobs.append(("builtin", builtin))
    return [(n, s) for n, s in jobs if (not only or n in only) and n not in skip]


def start_hogs(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_hogs(hogs):
    for h in hogs:
        h.kill()
    for h in hogs:
        h.wait()


def reduce_correct(spec, out):
    start = time.time()
    proc = subprocess.run([binary, str(spec), "--out", str(out), "--quiet"], capture_output=True,
                          text=True)
    elapsed = time.time() - start
    why = ""
    if proc.returncode != 3:
        tail = (proc.stdout + proc.stderr).strip().splitlines()
        why = " | ".join(tail[-3:])[:300]
    return proc.returncode, elapsed, why


def hang_trial(spec, out):
    expect = re.search(r"culprit=(\d+)", spec.read_text())
    proc = subprocess.run([binary, "run", str(spec), "--out", str(out)], capture_output=True,
                          text=True)
    trials = sorted((out / "trials").glob("*/outcome.json"))
    if not trials:
        return None, None, f"no trial (exit {proc.returncode}): {proc.stderr[-200:]}"
    o = json.loads(trials[-1].read_text())
    declared = o.get("hang_declared_s")
    quiet_from = max((r.get("last_progress_s") or 0) for r in o["ranks"])
    root = ((o.get("diagnosis") or {}).get("root_cause") or {})
    named = root.get("rank") == int(expect.group(1)) if expect else None
    if declared is None or root.get("category") != "hang":
        return None, named, f"not a hang: {o['status']}: {o['reason'][:200]}"
    return declared - quiet_from, named, ""


def require_torch():
    """Every correct job runs `python3` from PATH; without torch there, each would fail at its
    import and the bench would report false failures that are only a missing environment."""
    import_torch = "import torch; print(torch.__version__)"
    probe = subprocess.run(["python3", "-c", import_torch], capture_output=True, text=True)
    version = probe.stdout.strip()
    major = re.match(r"(\d+)\.", version)
    if probe.returncode != 0 or not major or int(major.group(1)) < 2:
        got = version or (probe.stderr.strip().splitlines() or ["no output"])[-1]
        sys.exit(f"false_failures.py: python3 on PATH ({shutil.which('python3')}) has no PyTorch 2.x "
                 f"({got}); put the project's environment first: export PATH=$PWD/.venv/bin:$PATH")


def main():
    require_torch()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = correct_jobs(tmp)
        hangs = [s for s in sorted((ROOT / "bench/hangs").glob("*.yaml"))
                 if (not only or s.stem in only) and s.stem not in skip]
        summary = []
        bad = False
        for load in loads:
            hogs = start_hogs(load)
            try:
                false = 0
                for name, spec in jobs:
                    out = pathlib.Path(tmp) / f"out-{name}-{load}"
                    code, elapsed, why = reduce_correct(spec, out)
                    ok = code == 3
                    false += not ok
                    print(f"load {load}  {'ok  ' if ok else 'FAIL'} {name:24} exit {code} "
                          f"{elapsed:6.1f} s" + (f"  {why}" if why else ""), flush=True)
                    shutil.rmtree(out, ignore_errors=True)
                delays = []
                for spec in hangs:
                    out = pathlib.Path(tmp) / f"hang-{spec.stem}-{load}"
                    delay, named, why = hang_trial(spec, out)
                    limit = 5.5 if load == 0 else 15.0
                    ok = delay is not None and delay <= limit and named is not False
                    bad = bad or not ok
                    delays.append(delay)
                    shown = "-" if delay is None else f"{delay:.1f} s"
                    print(f"load {load}  {'ok  ' if ok else 'FAIL'} hang {spec.stem:19} declared "
                          f"{shown} after the last progress, culprit "
                          f"{'named' if named else 'NOT named' if named is False else '-'}"
                          + (f"  {why}" if why else ""), flush=True)
                    shutil.rmtree(out, ignore_errors=True)
                bad = bad or false > 0
                shown = ", ".join("-" if d is None else f"{d:.1f} s" for d in delays)
                summary.append(f"load {load} hogs: false failures {false}/{len(jobs)} reductions;"
                               f" hangs declared after {shown or '-'}")
            finally:
                stop_hogs(hogs)
        print("\n".join(summary))
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
