#!/usr/bin/env bash
# The output folder's disk fills up during a reduction (a small tmpfs): the driver stops with a
# clear error that says how to continue, the journal holds only whole records, no process is
# left, and after making room --resume reaches the same minimum without rerunning a finished
# trial. Two ways to fill it: the folder is small from the start (the driver stops before a
# trial could be cut short), and another program fills it in the middle of a trial (real
# ENOSPC on our own writes). Needs root (mount); exits 77 otherwise.
# Usage: reduce_disk_full.sh DDPBISECT ROOT
set -u
bin=$1 root=$2
source "$(dirname "$0")/lib.sh"
if [[ $(id -u) != 0 ]]; then
  echo "skipped: mounting a small tmpfs needs root"
  exit 77
fi
tmp=$(mktemp -d)
mounted=()
cleanup() {
  for m in "${mounted[@]}"; do umount "$m" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
spec=$root/tests/reduce/fast.yaml

small_disk() {  # small_disk DIR SIZE
  mkdir -p "$1"
  mount -t tmpfs -o "size=$2" tmpfs "$1" || { echo "skipped: cannot mount a tmpfs here"; exit 77; }
  mounted+=("$1")
}
leftovers() {
  grep -lsa "DDPBISECT_TRIAL_TOKEN=" /proc/[0-9]*/environ 2>/dev/null | xargs -r grep -lsa "$1" 2>/dev/null | wc -l
}
# Every line of the journal a whole JSON record, and its trials.
check_journal() {
  py '
import json, sys
text = open(sys.argv[1], "rb").read().decode()
assert text.endswith("\n"), "the last record is torn"
for line in text.splitlines():
    json.loads(line)
' "$1"
}
# The resumed run: exit 0, the reference minimum, every record before the failure kept and no
# (configuration, attempt) journaled twice.
check_resumed() {  # check_resumed OUT BEFORE.jsonl
  py '
import collections, json, sys
out, before_path, ref = sys.argv[1], sys.argv[2], sys.argv[3]
got = json.load(open(out + "/report.json"))["minimal"]
want = json.load(open(ref + "/report.json"))["minimal"]
assert got == want, (got, want)
before = [json.loads(l) for l in open(before_path)]
after = [json.loads(l) for l in open(out + "/journal.jsonl")]
assert after[: len(before)] == before, "records written before the disk filled changed"
keys = collections.Counter((e["key"], e["attempt"]) for e in after if e.get("type") == "trial")
twice = [k for k, n in keys.items() if n > 1]
assert not twice, f"trials run twice: {twice}"
' "$1" "$2" "$tmp/ref"
}

"$bin" "$spec" --out "$tmp/ref" --quiet >/dev/null 2>&1 || bad "reference reduction failed"

# 1. Too small from the start: 1 MiB must stay free, and a few trials' files fill the rest.
small_disk "$tmp/small" 1300k
"$bin" "$spec" --out "$tmp/small/out" --quiet >/dev/null 2>"$tmp/small.err"
rc=$?
[[ $rc == 1 ]] && grep -q "No space left on device" "$tmp/small.err" && grep -q -- "--resume" "$tmp/small.err" &&
  ok || { bad "small disk: exit $rc, want 1 with a clear message"; cat "$tmp/small.err"; }
check_journal "$tmp/small/out/journal.jsonl" && ok || bad "small disk: the journal is not whole records"
[[ $(grep -c '"type":"trial"' "$tmp/small/out/journal.jsonl") -ge 1 ]] && ok || bad "small disk: no trial journaled"
[[ $(leftovers "$tmp/small/out") == 0 ]] && ok || bad "small disk: processes left"
cp "$tmp/small/out/journal.jsonl" "$tmp/small.before"
mount -o remount,size=64m "$tmp/small"
"$bin" "$spec" --out "$tmp/small/out" --resume --quiet >/dev/null 2>"$tmp/small.resume.err" && ok ||
  { bad "small disk: resume exited $?"; cat "$tmp/small.resume.err"; }
check_resumed "$tmp/small/out" "$tmp/small.before" && ok || bad "small disk: resume differs"

# 2. Filled by someone else while a trial runs: our writes meet ENOSPC.
small_disk "$tmp/shared" 64m
"$bin" "$spec" --out "$tmp/shared/out" --quiet >/dev/null 2>"$tmp/shared.err" &
driver=$!
for _ in $(seq 3000); do
  n=$(grep -c '"type":"trial"' "$tmp/shared/out/journal.jsonl" 2>/dev/null)
  [[ ${n:-0} -ge 6 ]] && break
  sleep 0.01
done
dd if=/dev/zero of="$tmp/shared/filler" bs=64k 2>/dev/null  # until the disk is full
wait $driver
rc=$?
[[ $rc == 1 ]] && grep -q "No space left on device" "$tmp/shared.err" && ok ||
  { bad "filled disk: exit $rc, want 1 with a clear message"; cat "$tmp/shared.err"; }
check_journal "$tmp/shared/out/journal.jsonl" && ok || bad "filled disk: the journal is not whole records"
[[ $(leftovers "$tmp/shared/out") == 0 ]] && ok || bad "filled disk: processes left"
cp "$tmp/shared/out/journal.jsonl" "$tmp/shared.before"
rm -f "$tmp/shared/filler"
"$bin" "$spec" --out "$tmp/shared/out" --resume --quiet >/dev/null 2>"$tmp/shared.resume.err" && ok ||
  { bad "filled disk: resume exited $?"; cat "$tmp/shared.resume.err"; }
check_resumed "$tmp/shared/out" "$tmp/shared.before" && ok || bad "filled disk: resume differs"

finish reduce_disk_full
