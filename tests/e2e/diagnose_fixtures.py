"""Runs `ddpbisect explain` (JSON and text) on every case of a fixture corpus and compares the root
cause with the case's `expect` file.

Keys: failed (yes/no), rank (a number, or `unknown` when the logs cannot settle it), category,
exception, frame (file:function), message (a substring); absent keys are not checked. Every case
also checks what an unknown rank must look like everywhere: the JSON gives null (never -1) for a
rank that is not known, and the text output never says "rank -1".

Prints one line per failing case, then the pass count per key, and exits 1 if any case fails.
With --score-floor P (a corpus scored rather than required whole, tests/diagnose/corpus): the
score is the share of cases right on failed, rank, category, exception and frame together (the
message is counted apart), printed as `score: right/cases (P %)`, and the exit is 1 only below
P %. --quiet: no line per failing case (a holdout is scored, not read).
usage: diagnose_fixtures.py DDPBISECT ROOT... [--score-floor P] [--quiet]"""
import json
import pathlib
import re
import subprocess
import sys

KEYS = ("failed", "rank", "category", "exception", "frame", "message")


def read_expect(path):
    expect = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        key, _, value = line.partition(":")
        expect[key.strip()] = value.strip()
    return expect


def rank_text(value):
    return "unknown" if value is None else str(value)


def negative_ranks(j):
    """Every place a JSON value named like a rank holds a negative number."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                if "rank" in k and isinstance(v, int) and not isinstance(v, bool) and v < 0:
                    found.append(f"{path}.{k}={v}")
                walk(v, f"{path}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                if "rank" in path.rsplit(".", 1)[-1] and isinstance(v, int) and v < 0:
                    found.append(f"{path}[{i}]={v}")
                walk(v, f"{path}[{i}]")

    walk(j, "$")
    return found


def check(binary, case):
    expect = read_expect(case / "expect")
    proc = subprocess.run([binary, "explain", "--json", str(case / "input")],
                          capture_output=True, text=True)
    text = subprocess.run([binary, "explain", str(case / "input")], capture_output=True, text=True)
    results, problems = {}, []

    def verdict(key, ok, why):
        results[key] = ok
        if not ok:
            problems.append(why)

    if re.search(r"\brank:? -1\b|\becho of rank -1\b", text.stdout):
        problems.append("text output says rank -1")
        results["no-rank-minus-1"] = False
    if expect.get("failed") == "no":
        verdict("failed", proc.returncode == 3, f"exit {proc.returncode}, want 3 (no failure)")
        return results, problems
    if proc.returncode != 0:
        verdict("failed", False, f"exit {proc.returncode}: {proc.stderr.strip()[:200]}")
        return results, problems
    results["failed"] = True
    d = json.loads(proc.stdout)
    bad = negative_ranks(d)
    if bad:
        problems.append("JSON has negative ranks: " + ", ".join(bad[:4]))
        results["no-rank-minus-1"] = False
    root, sig = d["root_cause"], d["signature"]
    got = {
        "rank": rank_text(root["rank"]),
        "category": root["category"],
        "exception": root["exception"],
        "frame": sig["frame"],
    }
    for key in ("rank", "category", "exception", "frame"):
        if key in expect:
            verdict(key, got[key] == expect[key], f"{key}: got {got[key]!r}, want {expect[key]!r}")
    if "message" in expect:
        verdict("message", expect["message"] in root["message"],
                f"message {root['message'][:120]!r} lacks {expect['message']!r}")
    return results, problems


SCORED = ("failed", "rank", "category", "exception", "frame", "no-rank-minus-1")


def main():
    args = sys.argv[1:]
    floor = None
    if "--score-floor" in args:
        i = args.index("--score-floor")
        floor = float(args[i + 1])
        del args[i : i + 2]
    quiet = "--quiet" in args
    args = [a for a in args if a != "--quiet"]
    binary, roots = args[0], [pathlib.Path(a) for a in args[1:]]
    passed = failed = right = 0
    per_key = {}
    cases = [p for root in roots for p in sorted(root.iterdir())
             if p.is_dir() and (p / "expect").exists()]
    for case in cases:
        results, problems = check(binary, case)
        for key, ok in results.items():
            good, total = per_key.get(key, (0, 0))
            per_key[key] = (good + ok, total + 1)
        right += all(ok for key, ok in results.items() if key in SCORED)
        if problems:
            failed += 1
            if not quiet:
                print(f"FAIL {case.parent.name}/{case.name}: " + "; ".join(problems))
        else:
            passed += 1
    keys = [k for k in KEYS if k in per_key] + [k for k in per_key if k not in KEYS]
    print("per key: " + ", ".join(f"{k} {per_key[k][0]}/{per_key[k][1]}" for k in keys))
    name = " + ".join(r.name for r in roots)
    print(f"{name}: {passed} passed, {failed} failed")
    if floor is None:
        sys.exit(1 if failed else 0)
    score = 100.0 * right / max(1, len(cases))
    print(f"score: {right}/{len(cases)} ({score:.1f} %) on failed, rank, category, exception and "
          f"frame together; floor {floor:.1f} %")
    sys.exit(0 if score >= floor else 1)


if __name__ == "__main__":
    main()
