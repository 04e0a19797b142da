#!/usr/bin/env bash
# Every subcommand's exit codes, from real trials of tiny command workloads: run (pass, fail,
# infra), check with and without --bisect (good, bad, skip, bad input, internal error), reduce
# (reduced, not reproduced, budget exhausted), explain, doctor, validate, config. The internal
# error is real: an output folder that is a file cannot be created (our own files cannot be
# written, docs/architecture.md). check's JUnit XML is validated as Jenkins and GitLab read it.
# Usage: exit_codes.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$(realpath "$1") root=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prog=$root/tests/e2e/programs/verdict.py

# spec NAME VERDICT: a one-rank spec running verdict.py VERDICT, with ValueError pinned. Cold
# starts: verdict.py imports no torch, and a warm start's fork server would import it for every
# one of the ~30 invocations (19 s each beside 2 busy processes, against 0.2 s cold).
spec() {
  cat >"$tmp/$1.yaml" <<YAML
version: 1
name: $1
workload:
  command: [python3, $prog, $2, "{samples}"]
  preload: none
  samples: 8
stages:
  - {name: one, nodes: 1, procs_per_node: 1}
match:
  signature: {category: python_exception, exception: ValueError}
report: {dir: out-$1}
YAML
}
for v in pass value_error key_error infra culprit; do spec "$v" "$v"; done
echo "not a file" >"$tmp/a-file"

# expect WANT DESCRIPTION -- CMD...
expect() {
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>&1; local rc=$?
  [[ $rc == "$want" ]] && ok || { bad "$what: exit $rc, want $want"; tail -5 "$tmp/out" >&2; }
}

expect 0 "run: the trial passed" -- "$bin" run "$tmp/pass.yaml"
expect 1 "run: the trial failed" -- "$bin" run "$tmp/value_error.yaml"
expect 125 "run: infra" -- "$bin" run "$tmp/infra.yaml"
expect 2 "run: bad input" -- "$bin" run "$tmp/pass.yaml" --stage nope
expect 70 "run: internal error (the output folder is a file)" -- "$bin" run "$tmp/pass.yaml" --out "$tmp/a-file/x"
grep -q '^ddpbisect run: internal error: ' "$tmp/out" && ok || bad "run: the internal error is not named as one"

expect 0 "check: the pinned failure reproduced (--expect fail)" -- "$bin" check "$tmp/value_error.yaml" --junit "$tmp/held.xml"
expect 1 "check: the job passed (--expect fail)" -- "$bin" check "$tmp/pass.yaml" --junit "$tmp/passed.xml"
grep -q '^run 1/1: passed' "$tmp/out" && grep -q '^not as expected: ' "$tmp/out" && ! grep -qE 'bad|good' "$tmp/out" && ok ||
  { bad "check: not in neutral words"; cat "$tmp/out" >&2; }
expect 1 "check: a different failure (--expect fail)" -- "$bin" check "$tmp/key_error.yaml" --junit "$tmp/different.xml"
expect 0 "check: --expect pass, it passed" -- "$bin" check "$tmp/pass.yaml" --expect pass
expect 1 "check: --expect pass, it failed" -- "$bin" check "$tmp/value_error.yaml" --expect pass --junit "$tmp/regressed.xml"
expect 125 "check: every run infra" -- "$bin" check "$tmp/infra.yaml" --repeats 2 --junit "$tmp/infra.xml"
expect 2 "check: bad input" -- "$bin" check "$tmp/nope.yaml"
expect 70 "check: internal error" -- "$bin" check "$tmp/pass.yaml" --out "$tmp/a-file/x"
expect 0 "check --bisect: good" -- "$bin" check --bisect "$tmp/pass.yaml"
expect 1 "check --bisect: bad" -- "$bin" check --bisect "$tmp/value_error.yaml"
expect 125 "check --bisect: a different failure is skipped" -- "$bin" check --bisect "$tmp/key_error.yaml"
expect 125 "check --bisect: infra is skipped" -- "$bin" check --bisect "$tmp/infra.yaml"
expect 128 "check --bisect: bad input aborts" -- "$bin" check --bisect "$tmp/nope.yaml"
expect 255 "check --bisect: an internal error aborts" -- "$bin" check --bisect "$tmp/pass.yaml" --out "$tmp/a-file/x"
# check's trials go under the spec's report.dir, beside the spec, wherever it is run from.
[[ -d $tmp/out-value_error/trials ]] && ok || bad "check: report.dir did not resolve against the spec's folder"
for x in held passed different regressed infra; do
  python3 "$root/tests/e2e/junit_check.py" "$tmp/$x.xml" >"$tmp/junit.out" 2>&1 && ok ||
    { bad "JUnit $x.xml: $(cat "$tmp/junit.out")"; }
done
python3 - "$tmp" <<'PY' && ok || bad "JUnit: the failures do not say what failed"
import sys, xml.etree.ElementTree as ET
tmp = sys.argv[1]
def failure(name):
    return ET.parse(f"{tmp}/{name}.xml").getroot().find("testsuite/testcase/failure")
assert failure("held") is None
f = failure("passed")
assert f.get("type") == "NotReproduced" and "did not reproduce" in f.text, ET.tostring(f)
f = failure("different")
assert f.get("type") == "KeyError" and f.get("message").startswith("rank 0: KeyError: "), f.attrib
assert "Traceback (most recent call last):" in f.text and "verdict.py" in f.text, f.text
f = failure("regressed")
assert f.get("type") == "ValueError" and "the pinned failure" in f.get("message"), f.attrib
assert "raise ValueError" in f.text, f.text
s = ET.parse(f"{tmp}/infra.xml").getroot().findall("testsuite/testcase/skipped")
assert len(s) == 2, s
PY

expect 0 "reduce: reduced" -- "$bin" "$tmp/culprit.yaml" --out "$tmp/r-ok" --quiet --confirm 1
expect 3 "reduce: did not reproduce" -- "$bin" "$tmp/pass.yaml" --out "$tmp/r-pass" --quiet
expect 4 "reduce: the budget ran out" -- "$bin" "$tmp/culprit.yaml" --out "$tmp/r-budget" --quiet --max-trials 3
grep -q '"status": "budget_exhausted"' "$tmp/r-budget/report.json" && ok || bad "reduce: budget_exhausted not in report.json"
expect 2 "reduce: bad input (an existing output folder)" -- "$bin" "$tmp/culprit.yaml" --out "$tmp/r-ok"

trial=$(ls -d "$tmp"/out-value_error/trials/* | head -1)
passing=$(ls -d "$tmp"/out-pass/trials/* | head -1)
expect 0 "explain: a failure found" -- "$bin" explain "$trial"
expect 3 "explain: no failure" -- "$bin" explain "$passing"
expect 2 "explain: a missing path" -- "$bin" explain "$tmp/missing"

expect 0 "doctor: nothing failed" -- "$bin" doctor "$tmp/pass.yaml" --no-comm --out "$tmp/d-ok"
expect 1 "doctor: a check failed (the workload fails on one process)" -- "$bin" doctor "$tmp/value_error.yaml" --no-comm --out "$tmp/d-fail"
expect 2 "doctor: bad input" -- "$bin" doctor "$tmp/pass.yaml" --stage nope

expect 0 "validate: valid" -- "$bin" validate "$tmp/pass.yaml"
expect 2 "validate: invalid" -- "$bin" validate "$tmp/a-file"
expect 0 "config: printed" -- "$bin" config "$tmp/pass.yaml"
expect 2 "config: bad --set" -- "$bin" config "$tmp/pass.yaml" --set nope=1
finish exit_codes
