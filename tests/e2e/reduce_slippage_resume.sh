#!/usr/bin/env bash
# Slippage: a candidate that fails differently is never accepted. Resume: kill -9 the driver in
# the middle of a reduction, --resume, and reach the same result without rerunning a trial.
set -u
bin=$1 root=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0 passed=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
py() { /usr/bin/python3 -c "$@"; }
# Two reductions reach the same minimum: the same configuration. The stage it is labelled with is
# the route the climb took (a trial that a loaded machine judged otherwise makes it climb
# further, then reduce the topology back down): a difference there is printed, with both runs'
# trials, but is not a different result.
same_minimum() {
  py '
import json, sys
def minimal(d): return json.load(open(d + "/report.json"))["minimal"]
def story(d):
    for l in open(d + "/journal.jsonl"):
        e = json.loads(l) if l.strip() else {}
        if e.get("type") == "trial":
            print("   ", d.rsplit("/", 1)[-1], e["status"], e["config"].get("stage"), e["key"][:50],
                  (e.get("text") or "").split("\n")[0][:120])
a, b = minimal(sys.argv[1]), minimal(sys.argv[2])
if a != b:
    story(sys.argv[1]); story(sys.argv[2])
    print("note: minimum", a, "vs", b)
a.pop("stage"); b.pop("stage")
assert a == b, (a, b)
' "$1" "$2"
}

"$bin" "$root/tests/reduce/slippage.yaml" --out "$tmp/slip" --quiet --confirm 1 >/dev/null 2>"$tmp/slip.err" || { bad "slippage: exit $?"; cat "$tmp/slip.err"; }
py '
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
j = [json.loads(l) for l in open(sys.argv[1] + "/journal.jsonl")]
assert r["minimal"]["components"] == ["layernorm"], r["minimal"]["components"]
assert r["signature"]["exception"] == "RuntimeError", r["signature"]
other = [e for e in j if e.get("type") == "trial" and e["status"] == "fail" and e["signature"]["category"] != r["signature"]["category"]]
assert other, "no trial failed differently: the trap was never sprung"
' "$tmp/slip" && passed=$((passed + 1)) || bad "slippage: a different failure was accepted or never seen"

# Reference: an uninterrupted reduction, with secrets in the environment.
spec=$root/tests/zoo/worker/culprit_sample.yaml
TORCH_E2E_TOKEN=s3cr3t-value-123 NCCL_E2E_STORE="https://alice:hunter2@store:8080/x" \
  "$bin" "$spec" --out "$tmp/ref" --quiet --confirm 1 >/dev/null 2>&1 || bad "resume: reference run failed"
# report.md: the summary, the root cause, the environment with the secrets redacted everywhere.
grep -q '^\*\*Root cause:\*\* python_exception RuntimeError at faults.cpp:fire_step_faults' "$tmp/ref/report.md" &&
  grep -q '| samples | 64 | 1 (37) |' "$tmp/ref/report.md" &&
  grep -q 'RuntimeError: bad record' "$tmp/ref/report.md" &&
  grep -q '`TORCH_E2E_TOKEN` | `<redacted>`' "$tmp/ref/report.md" &&
  grep -q 'alice:<redacted>@store' "$tmp/ref/report.md" && passed=$((passed + 1)) || bad "report.md: summary, root cause or redaction missing"
! grep -rlq -e 's3cr3t-value-123' -e 'hunter2' "$tmp/ref" && passed=$((passed + 1)) || bad "a secret from the environment reached an output file"
# Interrupted: kill -9 after 10 finished trials, then resume.
"$bin" "$spec" --out "$tmp/res" --quiet --confirm 1 >/dev/null 2>&1 &
driver=$!
for _ in $(seq 600); do
  n=$(grep -c '"type":"trial"' "$tmp/res/journal.jsonl" 2>/dev/null)
  [[ ${n:-0} -ge 10 ]] && break
  sleep 0.1
done
kill -9 $driver; wait $driver 2>/dev/null
sleep 0.3
[[ $(grep -lsa "DDPBISECT_TRIAL_TOKEN=" /proc/[0-9]*/environ 2>/dev/null | xargs -r grep -lsa "$tmp/res" 2>/dev/null | wc -l) == 0 ]] || bad "resume: ranks outlived the killed driver"
cp "$tmp/res/journal.jsonl" "$tmp/before.jsonl"
"$bin" "$spec" --out "$tmp/res" --resume --quiet --confirm 1 >/dev/null 2>"$tmp/res.err" || { bad "resume: exit $?"; cat "$tmp/res.err"; }
same_minimum "$tmp/ref" "$tmp/res" && py '
import json, sys
before = [json.loads(l) for l in open(sys.argv[1] + "/before.jsonl") if l.strip()]
after = [json.loads(l) for l in open(sys.argv[1] + "/res/journal.jsonl") if l.strip()]
done = {e["key"] for e in before if e.get("type") == "trial"}
new = [e for e in after[len(before):] if e.get("type") == "trial"]
rerun = [e["key"] for e in new[:-1] if e["key"] in done]  # the last one is the confirmation rerun
assert not rerun, f"rerun after resume: {rerun}"
assert len([e for e in before if e.get("type") == "trial"]) >= 10 and new, (len(done), len(new))
' "$tmp" && passed=$((passed + 1)) || bad "resume: different result or a finished trial was rerun"

# The repro: run.sh reproduces without ddpbisect; check exits by expectation; JUnit for CI.
DDPBISECT_WORKER=$(dirname "$bin")/ddpbisect-worker bash "$tmp/ref/repro/run.sh" >"$tmp/runsh.out" 2>&1; rc=$?
[[ $rc == 1 ]] && grep -q "RuntimeError: bad record" "$tmp"/ref/repro/rank*.log && passed=$((passed + 1)) ||
  { bad "run.sh: exit $rc, or the failure is not in its rank logs"; cat "$tmp/runsh.out"; }
repro=$tmp/ref/repro/repro.yaml
"$bin" check "$repro" --expect fail --out "$tmp/chk" --junit "$tmp/junit.xml" >/dev/null 2>&1; rc_fail=$?
"$bin" check "$repro" --expect pass --out "$tmp/chk" >/dev/null 2>&1; rc_pass=$?
"$bin" check "$repro" --bisect --out "$tmp/chk" >/dev/null 2>&1; rc_bisect=$?
[[ "$rc_fail $rc_pass $rc_bisect" == "0 1 1" ]] && passed=$((passed + 1)) ||
  bad "check: --expect fail/--expect pass/--bisect exited $rc_fail/$rc_pass/$rc_bisect, want 0/1/1"
py '
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suite = root.find("testsuite")
assert root.tag == "testsuites" and suite is not None, root.tag
assert suite.get("tests") == "1" and suite.get("failures") == "0", suite.attrib
assert suite.find("testcase").get("name"), "no testcase name"
' "$tmp/junit.xml" && passed=$((passed + 1)) || bad "junit: not the shape CI systems read"
# Fixed code passes: the same repro with the fault condition unmet is "good" for git bisect.
sed 's/^    samples: "37"$/    samples: "36"/' "$repro" >"$tmp/ref/repro/fixed.yaml"
"$bin" check "$tmp/ref/repro/fixed.yaml" --bisect --out "$tmp/chk" >/dev/null 2>&1; rc=$?
[[ $rc == 0 ]] && passed=$((passed + 1)) || bad "check --bisect on a passing repro: exit $rc, want 0"

# --jobs 2 tests candidates concurrently and must reach the same minimum.
"$bin" "$spec" --out "$tmp/jobs" --jobs 2 --quiet --confirm 1 >/dev/null 2>&1 || bad "jobs: exit $?"
same_minimum "$tmp/ref" "$tmp/jobs" && passed=$((passed + 1)) || bad "jobs: a different minimum with --jobs 2"

# A budget: the best configuration so far is reported as such.
# A spent budget is not success: exit 4 (reduce's own code), the best configuration still reported.
"$bin" "$spec" --out "$tmp/budget" --max-trials 4 --quiet --confirm 0 >/dev/null 2>&1
rc=$?; [[ $rc == 4 ]] || bad "budget: exit $rc, want 4"
py '
import json, sys
r = json.load(open(sys.argv[1] + "/budget/report.json"))
assert r["status"] == "budget_exhausted", r["status"]
assert r["trials"]["total"] <= 4, r["trials"]
' "$tmp" && passed=$((passed + 1)) || bad "budget: not reported as budget_exhausted within 4 trials"

# The output folder of a finished reduction is never overwritten.
"$bin" "$spec" --out "$tmp/ref" --quiet >/dev/null 2>"$tmp/again.err"; rc=$?
[[ $rc == 2 ]] && grep -q -- "--resume" "$tmp/again.err" && [[ -s $tmp/ref/report.json ]] &&
  passed=$((passed + 1)) || bad "existing output folder: exit $rc"

echo "slippage/resume: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
