#!/usr/bin/env bash
# Issue #16, trial isolation: what a trial writes in its working folder or in a workload.state path
# never reaches the next trial nor the real folders; the ranks of one trial share one view; the
# overlay's upper folder holds what the trial wrote. Cases: overlay as root, overlay in a user
# namespace (an unprivileged user), the copy fallback (DDPBISECT_ISOLATION=copy, one warning).
# usage: isolation.sh DDPBISECT
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A "resuming" rank: fails when the previous trial's files are visible; writes them otherwise.
# Rank 1 waits for rank 0's marker: the two share one view.
mk_case() {
  local dir=$1
  mkdir -p "$dir/work" "$dir/state"
  echo original >"$dir/work/data.txt"
  echo 0 >"$dir/state/counter"
  cat >"$dir/work/job.sh" <<'JOB'
set -u
if [[ $RANK == 0 ]]; then
  [[ -e snapshot.pt ]] && { echo "resumed from an earlier trial's snapshot.pt"; exit 3; }
  [[ $(cat "$STATE/counter") == 0 ]] || { echo "state changed by an earlier trial"; exit 4; }
  echo "rank0" >snapshot.pt; echo changed >data.txt; echo 1 >"$STATE/counter"
else
  for _ in $(seq 50); do [[ -e snapshot.pt ]] && break; sleep 0.1; done
  [[ -e snapshot.pt ]] || { echo "rank 1 does not see rank 0's file"; exit 5; }
fi
JOB
  cat >"$dir/spec.yaml" <<YAML
version: 1
name: isolation
workload:
  command: [bash, job.sh]
  cwd: work
  agent: false
  state: [state/counter]
  env: {STATE: $dir/state${2:+, DDPBISECT_ISOLATION: $2}}
stages: [{name: two, nodes: 1, procs_per_node: 2}]
limits: {trial_timeout: 30s}
report: {dir: out}
YAML
}

check_case() {  # DIR LABEL [RUNNER...]
  local dir=$1 label=$2
  shift 2
  for i in 1 2; do
    "$@" "$bin" run "$dir/spec.yaml" --out "$dir/out$i" >"$dir/run$i.log" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] || { cat "$dir/run$i.log"; cat "$dir"/out$i/trials/*/node0/*.std* 2>/dev/null; fail "$label: trial $i exited $rc"; }
  done
  [[ ! -e $dir/work/snapshot.pt ]] || fail "$label: snapshot.pt reached the real folder"
  [[ $(cat "$dir/work/data.txt") == original ]] || fail "$label: data.txt changed in the real folder"
  [[ $(cat "$dir/state/counter") == 0 ]] || fail "$label: the state file changed"
  echo "ok   $label"
}

# 1. overlay, as root (or as whoever runs the test: then a user namespace).
mk_case "$tmp/a"
check_case "$tmp/a" "overlay ($(id -un))"
upper=$(echo "$tmp"/a/out1/trials/*/isolation/*/upper)
[[ -f $upper/snapshot.pt && -f $upper/data.txt ]] || fail "the upper folder lacks what the trial wrote: $(ls -A "$upper")"
grep -rq "no overlayfs view" "$tmp"/a/out1/trials/*/node0/ && fail "overlay: a fallback warning"

# 2. unprivileged: overlay inside a user namespace.
if [[ $(id -u) == 0 ]] && command -v setpriv >/dev/null; then
  mk_case "$tmp/b"
  chown -R nobody: "$tmp/b"
  chmod 755 "$tmp"
  check_case "$tmp/b" "overlay (unprivileged, user namespace)" \
    setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$tmp/b"
  grep -q " 1$" "$tmp"/b/out1/trials/*/isolation/*/members || fail "unprivileged: no user namespace"
else
  echo "skip unprivileged case (needs root and setpriv)"
fi

# 3. the copy fallback: warned once per trial, working folder isolated.
mk_case "$tmp/c" copy
# A copy cannot isolate state paths: this case leaves them out.
sed -i 's/  state: \[state\/counter\]//' "$tmp/c/spec.yaml"
sed -i 's/; echo 1 >"$STATE\/counter"//' "$tmp/c/work/job.sh"
check_case "$tmp/c" "copy fallback"
n=$(cat "$tmp"/c/out1/trials/*/node0/*.stderr | grep -c "no overlayfs view")
[[ $n -eq 1 ]] || fail "copy fallback: $n warnings, want 1"
echo "isolation: all cases passed"
