"""Runs `ddpbisect explain --json` on every fixture under tests/diagnose/fixtures and compares the
root cause with the fixture's `expect` file (keys: failed, rank, category, exception, frame,
message; `message` is a substring, the others exact)."""
import json
import pathlib
import subprocess
import sys

binary, root = sys.argv[1], pathlib.Path(sys.argv[2])
passed = failed = 0
for case in sorted(p for p in root.iterdir() if p.is_dir()):
    expect = dict(
        line.split(": ", 1) if ": " in line else (line.rstrip(":"), "")
        for line in (case / "expect").read_text().splitlines()
        if line.strip()
    )
    proc = subprocess.run([binary, "explain", "--json", str(case / "input")], capture_output=True, text=True)
    problems = []
    if expect.get("failed") == "no":
        if proc.returncode != 3:
            problems.append(f"exit {proc.returncode}, want 3 (no failure)")
    elif proc.returncode != 0:
        problems.append(f"exit {proc.returncode}: {proc.stderr.strip()}")
    else:
        d = json.loads(proc.stdout)
        root_cause, sig = d["root_cause"], d["signature"]
        got = {
            "rank": str(root_cause["rank"]),
            "category": root_cause["category"],
            "exception": root_cause["exception"],
            "frame": sig["frame"],
        }
        for key in ("rank", "category", "exception", "frame"):
            if key in expect and got[key] != expect[key]:
                problems.append(f"{key}: got {got[key]!r}, want {expect[key]!r}")
        if "message" in expect and expect["message"] not in root_cause["message"]:
            problems.append(f"message {root_cause['message'][:120]!r} lacks {expect['message']!r}")
    if problems:
        failed += 1
        print(f"FAIL {case.name}: " + "; ".join(problems))
    else:
        passed += 1
print(f"diagnose fixtures: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
