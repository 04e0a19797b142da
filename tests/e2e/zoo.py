"""Reduces every zoo spec with the real ddpbisect binary and checks that the reduction ends exactly
at the planted minimum declared in the spec's `# expect:` line.

expect keys: nodes, procs_per_node, samples (indices), sample_count (any that many), components / features (comma lists, or a
bare number for "this many, any of them"), steps, batch_size, rate (lo-hi, the confirmed
reproduction rate), category and exception (the reported signature), debug_rerun (a variable the debug rerun set),
report_has (text report.md must contain), exit (the reduction's exit code instead of 0: 3 for a
correct job, where no stage may fail), max_trials (the reduction took at most that many),
culprit (the signature's rank), one_signature (every failing trial that was not a debug rerun
read as the target: a hang must not be a different failure from trial to trial), any other key: a param.
--preload MODS|auto|none: each spec reduced with that `workload.preload` (none: cold starts; warm
ones are the default), from a copy whose cwd is the spec's folder; the same minimum is expected. Every case: no process is left behind.
usage: zoo.py DDPBISECT ZOO_DIR [NAME...] [--strategy S] [--preload MOD,MOD...]"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

args = sys.argv[1:]
strategy = None
if "--strategy" in args:
    i = args.index("--strategy")
    strategy = args[i + 1]
    del args[i : i + 2]
preload = None
if "--preload" in args:
    i = args.index("--preload")
    preload = args[i + 1]
    del args[i : i + 2]


def with_preload(spec, tmp):
    """A copy of the spec with warm starts on (cwd made absolute: the copy lives elsewhere)."""
    text = spec.read_text()
    listed = preload if preload in ("auto", "none") else f"[{preload}]"
    edited = text.replace("  cwd: .\n", f"  cwd: {spec.parent.resolve()}\n  preload: {listed}\n")
    assert "preload:" in edited, f"{spec}: no `cwd: .` line to put preload after"
    copy = pathlib.Path(tmp) / spec.name
    copy.write_text(edited)
    return copy


def leftovers(marker):
    found = []
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:  # a process may end while it is read
            cmdline = (proc / "cmdline").read_bytes()
            if marker.encode() in cmdline + (proc / "environ").read_bytes() and \
                    (proc / "stat").read_text().split(") ")[-1][:1] != "Z":
                found.append(proc.name + " " + cmdline[:120].decode(errors="replace"))
        except OSError:
            continue
    return found


def different_failures(out, target):
    """Failing trials (debug reruns aside) whose signature is not the target's category and
    stuck frames: one bug must read as one failure in every trial."""
    found = []
    for line in (out / "journal.jsonl").read_text().splitlines():
        j = json.loads(line)
        sig = j.get("signature")
        if j.get("type") != "trial" or j.get("status") != "fail" or not sig:
            continue
        if sig["category"] != target["category"] or sig.get("stuck") != target.get("stuck"):
            found.append(f"{j['dir']}: {sig['category']} {sig.get('frame')} {sig.get('stuck')}")
    return ["failed differently: " + f for f in found[:3]]


binary, zoo, names = args[0], pathlib.Path(args[1]), set(args[2:])
unknown = names - {spec.stem for spec in zoo.glob("*.yaml")}
if unknown:  # a test that names a case must run it, not pass on nothing
    sys.exit(f"zoo.py: no such case in {zoo}: {', '.join(sorted(unknown))}")
passed = failed = 0
for spec in sorted(zoo.glob("*.yaml")):
    if names and spec.stem not in names:
        continue
    expect = {}
    for line in spec.read_text().splitlines():
        if line.startswith("# expect:"):
            for item in line.split(":", 1)[1].split():
                k, _, v = item.partition("=")
                expect[k] = v
    with tempfile.TemporaryDirectory() as tmp:
        run_spec = with_preload(spec, tmp) if preload else spec
        cmd = [binary, str(run_spec), "--out", tmp + "/out", "--quiet"]
        if strategy:
            cmd += ["--strategy", strategy]
        start = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        # A flaky case (an expected rate): the climb gives the failure five multi-rank chances
        # (node, multinode, three more of the full job), which all miss a 0.6 flake 1 % of the
        # time. Not reproduced (exit 3) there is that luck, not a wrong minimum: once more.
        if proc.returncode == 3 and "rate" in expect:
            print(f"note {spec.stem}: not reproduced by a flaky climb; reducing once more",
                  flush=True)
            shutil.rmtree(tmp + "/out", ignore_errors=True)
            proc = subprocess.run(cmd, capture_output=True, text=True)
        elapsed = time.time() - start
        problems = []
        trials = "-"
        if "exit" in expect:
            if proc.returncode != int(expect["exit"]):
                problems.append(f"exit {proc.returncode}, want {expect['exit']}: "
                                f"{(proc.stdout + proc.stderr).strip()[-600:]}")
            else:
                report = json.loads((pathlib.Path(tmp) / "out" / "report.json").read_text())
                trials = report["trials"]["total"]
        elif proc.returncode != 0:
            problems.append(f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
        else:
            report = json.loads((pathlib.Path(tmp) / "out" / "report.json").read_text())
            m = report["minimal"]
            got = {
                "nodes": str(m["nodes"]),
                "procs_per_node": str(m["procs_per_node"]),
                "samples": m["sample_indices"],
                "sample_count": str(m["samples"]),
                "components": ",".join(m["components"]),
                "features": ",".join(m["features"]),
                "steps": str(m["params"].get("steps")),
                "batch_size": str(m["params"].get("batch_size")),
            }
            for k, want in expect.items():
                if k == "rate":
                    lo, hi = map(float, want.split("-"))
                    rate = report["reproduction"]["rate"]
                    if not lo <= rate <= hi:
                        problems.append(f"rate {rate:.2f} outside {want}")
                elif k == "debug_rerun":  # the variable the debug rerun must have set
                    env = (report.get("debug_rerun") or {}).get("env", {})
                    if want not in env:
                        problems.append(f"debug rerun: {want} not set ({env})")
                elif k == "report_has":  # text report.md must show (the debug rerun's names)
                    md = (pathlib.Path(tmp) / "out" / "report.md").read_text()
                    if want not in md:
                        problems.append(f"report.md does not show {want!r}")
                elif k in ("category", "exception"):
                    if report["signature"][k] != want:
                        problems.append(f"{k}: got {report['signature'][k]!r}, want {want!r}")
                elif k == "max_trials":
                    if report["trials"]["total"] > int(want):
                        problems.append(f"{report['trials']['total']} trials, want at most {want}")
                elif k == "culprit":
                    if report["signature"]["ranks"] != [int(want)]:
                        problems.append(f"culprit: got {report['signature']['ranks']}, want [{want}]")
                elif k == "one_signature":
                    problems += different_failures(pathlib.Path(tmp) / "out", report["signature"])
                elif k in ("components", "features") and want.isdigit():
                    if len(m[k]) != int(want):
                        problems.append(f"{k}: got {m[k]}, want {want} of them")
                elif got.get(k, str(m["params"].get(k))) != want:  # any other key: a param
                    problems.append(f"{k}: got {got.get(k, m['params'].get(k))!r}, want {want!r}")
            trials = report["trials"]["total"]
        # No process is left behind: a rank, a helper, the warm-start server and its forks all
        # carry the output folder (or the trial folder under it) somewhere in their command line
        # or environment.
        for left in leftovers(tmp):
            problems.append(f"left behind: {left}")
    status = "FAIL" if problems else "ok"
    print(f"{status:4} {spec.stem:22} {elapsed:6.1f} s {trials:>4} trials"
          + (": " + "; ".join(problems) if problems else ""), flush=True)
    passed += not problems
    failed += bool(problems)
print(f"zoo: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
