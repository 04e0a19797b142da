#!/usr/bin/env bash
# Issue #8, --from-logs: a script with two bugs; the user's torchrun --log-dir shows the second.
# Without --from-logs the first failure met (the fused loss's single-process path, on one rank) is
# checked against the job (the last stage, full size), which fails with rank 1's lease: the lease
# is the target, and the report says the single stage's failure is not the job's (issue 25). With
# --from-logs, exactly the failure in the user's logs: escalation starts at the stage with the
# logs' ranks, past the one that fails differently, and the job need not be run to know it.
# Also: the helper module's heartbeats reach the driver, and bad --from-logs input exits 2.
# Usage: python_from_logs.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/spec.yaml" <<YAML
version: 1
name: two-bugs
workload:
  command: [python3, $root/tests/e2e/programs/two_bugs.py]
  cwd: .
  env: {PYTHONPATH: "$root/python:$root/tests/zoo/python"}
  samples: 16
  components: [norm, head]
  features: [grad_clip, fused_loss]
  params: {steps: 4, batch_size: 4}
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: node, nodes: 1, procs_per_node: 2}
limits: {trial_timeout: 60s}
YAML

# The user's failed job (the spec's full configuration on 2 ranks), with torchrun --log-dir's layout.
logs=$tmp/user-logs/job_1/attempt_0
printf '{"trial": {"samples": "0-15", "components": ["norm", "head"], "features": ["grad_clip", "fused_loss"], "params": {"steps": 4, "batch_size": 4}}}' >"$tmp/user-config.json"
pids=()
port=$((20000 + RANDOM % 10000))
for rank in 0 1; do
  mkdir -p "$logs/$rank"
  (cd "$tmp" && RANK=$rank LOCAL_RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    DDPBISECT_CONFIG=$tmp/user-config.json PYTHONPATH=$root/python:$root/tests/zoo/python \
    timeout 60 python3 "$root/tests/e2e/programs/two_bugs.py" >"$logs/$rank/stdout.log" 2>"$logs/$rank/stderr.log") &
  pids+=($!)
done
wait "${pids[@]}"
grep -q "lost its shard lease" "$logs/1/stderr.log" && ok || { bad "the user's job did not fail as planned"; cat "$logs"/*/stderr.log >&2; }

"$bin" "$tmp/spec.yaml" --out "$tmp/plain" --quiet --confirm 1 >/dev/null 2>"$tmp/plain.err" || bad "plain reduction exited $?"
"$bin" "$tmp/spec.yaml" --out "$tmp/chase" --quiet --confirm 1 --from-logs "$tmp/user-logs" >/dev/null 2>"$tmp/chase.err" ||
  { bad "--from-logs reduction exited $?"; cat "$tmp/chase.err" >&2; }
py '
import json, sys
plain = json.load(open(sys.argv[1] + "/plain/report.json"))
chase = json.load(open(sys.argv[1] + "/chase/report.json"))
assert plain["signature"]["frame"] == "two_bugs.py:renew_lease", plain["signature"]
assert plain["minimal"]["world_size"] == 2, plain["minimal"]
assert any("not your job" in n and "two_bugs.py:fused" in n for n in plain.get("notes", [])), plain.get("notes")
assert chase["signature"]["frame"] == "two_bugs.py:renew_lease", chase["signature"]
m = chase["minimal"]
assert (m["world_size"], m["features"], m["components"], m["steps"]) == (2, [], [], 3), m
# Escalation starts at the stage with as many ranks as the logs show: the single-process stage,
# which fails differently, is never climbed through.
assert chase["escalation"][0]["config"]["stage"] == "node", chase["escalation"]
' "$tmp" && ok || bad "--from-logs did not chase the failure in the user's logs"

# Masked: the fused loss now fails on every world size, so every stage of the full job fails
# with it, though the user's job failed with the lease. Escalation must unmask the lease bug by
# switching features off.
sed 's/  env: {PYTHONPATH: "\(.*\)"}/  env: {PYTHONPATH: "\1", FUSED_EVERYWHERE: "1"}/' "$tmp/spec.yaml" >"$tmp/masked.yaml"
grep -q FUSED_EVERYWHERE "$tmp/masked.yaml" || bad "could not write the masked spec"
"$bin" "$tmp/masked.yaml" --out "$tmp/masked" --quiet --confirm 1 --from-logs "$tmp/user-logs" >/dev/null 2>"$tmp/masked.err" ||
  { bad "masked --from-logs reduction exited $?"; tail -3 "$tmp/masked.err" >&2; }
py '
import json, sys
r = json.load(open(sys.argv[1] + "/masked/report.json"))
assert r["signature"]["frame"] == "two_bugs.py:renew_lease", r["signature"]
assert "fused_loss" not in r["minimal"]["features"] and r["minimal"]["world_size"] == 2, r["minimal"]
' "$tmp" && ok || bad "--from-logs did not unmask the failure hidden behind another"

# The helper's heartbeats reached the driver: the trials know each rank's last step.
py '
import glob, json, sys
steps = [r["heartbeats"] for f in glob.glob(sys.argv[1] + "/chase/trials/*/outcome.json")
         for r in json.load(open(f))["ranks"]]
assert steps and max(steps) >= 2, steps
' "$tmp" && ok || bad "no heartbeats from the helper module"

# Bad input: a folder without a failure, and a missing folder, exit 2 with a message.
mkdir -p "$tmp/clean/0" && echo "step 1 loss 0.3" >"$tmp/clean/0/stdout.log"
"$bin" "$tmp/spec.yaml" --out "$tmp/x1" --from-logs "$tmp/clean" >/dev/null 2>"$tmp/e1"; rc1=$?
"$bin" "$tmp/spec.yaml" --out "$tmp/x2" --from-logs "$tmp/nowhere" >/dev/null 2>"$tmp/e2"; rc2=$?
[[ $rc1 == 2 && $rc2 == 2 ]] && grep -q "no failure found" "$tmp/e1" && grep -q -- "--from-logs" "$tmp/e2" && ok ||
  bad "bad --from-logs input: exits $rc1/$rc2, messages: $(cat "$tmp/e1" "$tmp/e2")"

finish from-logs
