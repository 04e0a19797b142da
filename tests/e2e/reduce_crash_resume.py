"""SIGKILL the driver at 20 instants of a reduction and resume each: the same minimum every time,
no finished trial run again, no process left behind (issue #19, item 2).

The instants cover escalation, every pass that runs trials, and the confirm phase. To keep the
test near a minute, each instant starts from a prefix of an uninterrupted reference run's journal
(the state a driver killed right after that record leaves), resumes it, SIGKILLs the resumed
driver partway into its next trial, and resumes again to the end. At four instants the kill is
made to tear the journal's last record at a random byte first. Checked after each: exit 0, the
reference's minimum, every (configuration, attempt) journaled exactly as often as in the
reference (nothing rerun, nothing missing), and no process of the trial left in /proc.
usage: reduce_crash_resume.py DDPBISECT SPEC"""
import collections
import json
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

binary, spec = sys.argv[1], sys.argv[2]
random.seed(int(os.environ.get("DDPBISECT_TEST_SEED", "20")))
failures = []


def records(path):
    """Complete JSON lines of a journal."""
    text = pathlib.Path(path).read_bytes().decode(errors="replace") if os.path.exists(path) else ""
    out = []
    for line in text.split("\n")[:-1]:
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def trial_keys(entries):
    return collections.Counter((e["key"], e.get("attempt", 0)) for e in entries
                               if e.get("type") == "trial")


def leftovers(out):
    n = 0
    for environ in pathlib.Path("/proc").glob("[0-9]*/environ"):
        try:
            data = environ.read_bytes()
        except OSError:
            continue
        n += b"DDPBISECT_TRIAL_TOKEN=" in data and out.encode() in data
    return n


def reduce(out, *extra):
    return subprocess.run([binary, spec, "--out", out, "--jobs", "1", *extra],
                          capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    # The reference, and the phase each of its trials ran in.
    start = time.time()
    ref = reduce(f"{tmp}/ref")
    ref_time = time.time() - start
    if ref.returncode != 0:
        sys.exit(f"reference reduction failed ({ref.returncode}): {ref.stderr[-2000:]}")
    phase, phases = None, []
    for line in ref.stderr.splitlines():
        if line.startswith("== "):
            phase = re.sub(r"^round \d+: ", "", line[3:])
        elif re.match(r"  trial \d+:", line):
            phases.append(phase)
    ref_lines = pathlib.Path(f"{tmp}/ref/journal.jsonl").read_text().splitlines(keepends=True)
    ref_entries = [json.loads(l) for l in ref_lines]
    ref_min = json.load(open(f"{tmp}/ref/report.json"))["minimal"]
    n = sum(e.get("type") == "trial" for e in ref_entries)
    assert n == len(phases), (n, len(phases))
    per_trial = ref_time / n
    # 20 instants: the first trial of every phase, the rest spread evenly; a kill lands partway
    # into trial j (1-based), after the reference's first j-1 trials.
    firsts = sorted({phases.index(p) + 1 for p in set(phases)})
    spread = [1 + round(i * (n - 1) / 19) for i in range(20)]
    picks = firsts + [j for j in spread if j not in firsts][: 20 - len(firsts)]
    picks = sorted(picks + [random.randint(1, n) for _ in range(20 - len(picks))])
    tear = set(random.sample(range(20), 4))
    print(f"reference: {n} trials in {ref_time:.1f} s; phases {sorted(set(phases))}")

    for i, j in enumerate(picks):
        out = f"{tmp}/k{i:02d}"
        os.makedirs(out)
        seen = 0
        with open(f"{out}/journal.jsonl", "w") as f:  # the reference up to trial j-1
            for line, e in zip(ref_lines, ref_entries):
                if e.get("type") == "trial":
                    if seen == j - 1:
                        break
                    seen += 1
                f.write(line)
        driver = subprocess.Popen([binary, spec, "--out", out, "--jobs", "1", "--resume",
                                   "--quiet"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        time.sleep(random.uniform(0.2, 0.9) * per_trial)
        if driver.poll() is not None:
            failures.append(f"instant {i} (trial {j}, {phases[j - 1]}): finished before the kill")
            continue
        driver.send_signal(signal.SIGKILL)
        driver.wait()
        for _ in range(40):  # ranks die with their driver (PR_SET_PDEATHSIG)
            if leftovers(out) == 0:
                break
            time.sleep(0.05)
        if leftovers(out):
            failures.append(f"instant {i}: {leftovers(out)} process(es) outlived the killed driver")
        journal = pathlib.Path(f"{out}/journal.jsonl")
        if i in tear:  # a kill in the middle of writing the last record
            data = journal.read_bytes()
            last = data.rstrip(b"\n").rfind(b"\n") + 1
            journal.write_bytes(data[: random.randint(last + 1, len(data) - 1)])
        before = records(journal)
        res = reduce(out, "--resume", "--quiet")
        label = f"instant {i} (trial {j} of {n}, {phases[j - 1]}{', torn' if i in tear else ''})"
        if res.returncode != 0:
            failures.append(f"{label}: resume exited {res.returncode}: {res.stderr[-500:]}")
            continue
        after = records(journal)
        got = json.load(open(f"{out}/report.json"))["minimal"]
        problems = []
        if got != ref_min:
            problems.append(f"minimum {got} != {ref_min}")
        if after[: len(before)] != before:
            problems.append("the journal's finished records changed")
        diff = trial_keys(after) - trial_keys(ref_entries)
        missing = trial_keys(ref_entries) - trial_keys(after)
        if diff:
            problems.append(f"trials run more often than in the reference: {dict(diff)}")
        if missing:
            problems.append(f"trials missing: {dict(missing)}")
        if leftovers(out):
            problems.append("processes left after the resumed run")
        print(f"{'ok  ' if not problems else 'FAIL'} {label}" + ("; ".join([""] + problems)))
        failures += [f"{label}: {p}" for p in problems]

print(f"crash/resume: {20 - len(failures)} of 20 instants passed" if not failures else
      "\n".join(["FAILURES:"] + failures))
sys.exit(1 if failures else 0)
