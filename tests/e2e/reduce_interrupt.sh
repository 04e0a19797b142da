#!/usr/bin/env bash
# Ctrl-C during a --jobs 2 batch: the driver stops at once (exit 130 within the spec's grace),
# every rank is reaped, every trial that finished is in the journal; --resume then reaches the
# planted minimum without rerunning a finished trial.
# Usage: reduce_interrupt.sh DDPBISECT ROOT
set -u
bin=$1 root=$2
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
driver=
cleanup() {
  [[ -n $driver ]] && kill -9 "$driver" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
shopt -s nullglob
spec=$root/tests/zoo/worker/straggler.yaml  # trials of ~3 s, batches of two
out=$tmp/out
grace_s=2  # the spec's limits.grace (the default)

# Processes of this reduction still alive: they carry the trial token and the output folder.
leftovers() {
  grep -lsa "DDPBISECT_TRIAL_TOKEN=" /proc/[0-9]*/environ 2>/dev/null | xargs -r grep -lsa "$out" 2>/dev/null | wc -l
}
# Trial folders whose trial has started but not ended.
running() {
  local n=0 d
  for d in "$out"/trials/*/; do [[ -e $d/outcome.json ]] || n=$((n + 1)); done
  echo $n
}

"$bin" "$spec" --out "$out" --jobs 2 --quiet --confirm 1 >"$tmp/first.out" 2>"$tmp/first.err" &
driver=$!
fired=
for _ in $(seq 6000); do
  kill -0 "$driver" 2>/dev/null || break
  n=$(grep -c '"type":"trial"' "$out/journal.jsonl" 2>/dev/null)
  # A batch in flight, after enough finished trials that the journal has something to replay.
  if [[ ${n:-0} -ge 8 && $(running) -ge 2 ]]; then
    fired=$(date +%s.%N)
    kill -INT "$driver"
    break
  fi
  sleep 0.01
done
if [[ -z $fired ]]; then
  bad "never saw two trials running at once (driver exited early?)"
  cat "$tmp/first.err"
  finish reduce_interrupt
  exit 1
fi
wait "$driver"
rc=$?
ended=$(date +%s.%N)
driver=
took=$(py "print(f'{$ended - $fired:.2f}')")
[[ $rc == 130 ]] && ok || { bad "interrupted driver exited $rc, want 130"; cat "$tmp/first.err"; }
py "import sys; sys.exit(0 if $ended - $fired <= $grace_s else 1)" && ok ||
  bad "the driver took $took s to stop, more than the grace of $grace_s s"
grep -q -- "--resume" "$tmp/first.err" && ok || bad "no resume hint: $(cat "$tmp/first.err")"
[[ $(leftovers) == 0 ]] && ok || bad "processes of the trial outlived the interrupt"
echo "stopped in $took s"

# Every trial that ended with a verdict is journaled; the interrupted ones say so and are not.
py '
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
journal = [json.loads(l) for l in open(out / "journal.jsonl") if l.strip()]
journaled = {pathlib.Path(e["dir"]).name for e in journal if e.get("type") == "trial"}
statuses = {}
for o in sorted(out.glob("trials/*/outcome.json")):
    statuses[o.parent.name] = json.load(open(o))["status"]
finished = {d for d, s in statuses.items() if s in ("pass", "fail")}
missing = sorted(finished - journaled)
assert not missing, f"finished trials missing from the journal: {missing}"
interrupted = [d for d, s in statuses.items() if s == "interrupted"]
assert interrupted, f"no trial was interrupted: {statuses}"
assert not set(interrupted) & journaled, "an interrupted trial was journaled"
assert any(e.get("type") == "elapsed" for e in journal), "no elapsed time recorded"
' "$out" && ok || bad "the journal does not hold exactly the finished trials"
cp "$out/journal.jsonl" "$tmp/before.jsonl"

"$bin" "$spec" --out "$out" --resume --jobs 2 --quiet --confirm 1 >/dev/null 2>"$tmp/resume.err" && ok ||
  { bad "resume: exit $?"; cat "$tmp/resume.err"; }
py '
import json, sys
tmp, spec = sys.argv[1], sys.argv[2]
expect = {}
for line in open(spec):
    if line.startswith("# expect:"):
        expect = dict(item.partition("=")[::2] for item in line.split(":", 1)[1].split())
m = json.load(open(tmp + "/out/report.json"))["minimal"]
got = {"nodes": str(m["nodes"]), "procs_per_node": str(m["procs_per_node"]),
       "samples": m["sample_indices"], "components": ",".join(m["components"]),
       "features": ",".join(m["features"]), "steps": str(m["params"].get("steps")),
       "batch_size": str(m["params"].get("batch_size"))}
for k in ("components", "features"):  # a bare number: that many, any of them
    if expect.get(k, "").isdigit():
        got[k] = str(len(m[k]))
assert got == expect, (got, expect)
before = [json.loads(l) for l in open(tmp + "/before.jsonl") if l.strip()]
after = [json.loads(l) for l in open(tmp + "/out/journal.jsonl") if l.strip()]
# A finished trial is its configuration and attempt: later attempts of a configuration that ran
# (repeats by the job check and the measure phase) are new trials, not reruns.
done = {(e["key"], e.get("attempt", 0)) for e in before if e.get("type") == "trial"}
new = [e for e in after[len(before):] if e.get("type") == "trial"]
rerun = [e["key"] for e in new[:-1] if (e["key"], e.get("attempt", 0)) in done]  # the last: confirmation
assert not rerun, f"rerun after resume: {rerun}"
assert new, "nothing was left to run after the interrupt"
' "$tmp" "$spec" && ok || bad "resume: a different minimum, or a finished trial was rerun"
[[ $(leftovers) == 0 ]] && ok || bad "processes left after the resumed reduction"

finish reduce_interrupt
