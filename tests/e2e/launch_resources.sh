#!/usr/bin/env bash
# Containment and resource faults (issue 19, items 3 and 4), the real binary on real ranks:
#  - a rank double-forks and setsid's a sleeper, then the driver is SIGKILLed: the sleeper
#    outlives it, and the next ddpbisect on the same output folder kills it (checked through
#    /proc); with root through the trial's cgroup, and as an unprivileged user through the
#    token sweep;
#  - a fork bomb and a memory hog are stopped by limits.max_procs / limits.memory and reported
#    as such (category resource_limit), not as the bug (root: cgroups);
#  - a 10 GB line without a newline and binary garbage: the log cap holds and the driver's peak
#    RSS stays small (read from /proc while it runs).
# Usage: launch_resources.sh DDPBISECT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
chmod 755 "$tmp"
[[ -n ${KEEP:-} ]] || at_exit rm -rf "$tmp"
at_exit 'pkill -9 -f "$tmp/"'
json() { py "import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }
marked() { pgrep -f -- "$1\$" | wc -l; }

spec() {  # spec NAME MODE LIMITS
  # Cold starts: the checks find the ranks and their escapees by their command lines.
  cat >"$tmp/$1.yaml" <<EOS
workload:
  command: [python3, $here/programs/misbehave.py, $2, $tmp/$1]
  preload: none
stages: [{name: node, nodes: 1, procs_per_node: 2}]
limits: $3
EOS
}

# escape CASE [AS...]: the sleeper survives a SIGKILLed driver; the next run sweeps it.
escape() {
  local name=$1 driver t0 token
  shift
  spec "$name" grandchild "{hang_after: 60s, trial_timeout: 90s}"
  spec "$name-next" ok "{}"
  mkdir -p "$tmp/out-$name" && chown "${owner:-0}" "$tmp/out-$name"
  "$@" "$bin" run "$tmp/$name.yaml" --out "$tmp/out-$name" >/dev/null 2>&1 &
  driver=$!
  for _ in $(seq 100); do [[ $(marked "$tmp/$name") -ge 4 ]] && break; sleep 0.1; done
  kill -9 "$driver"
  wait "$driver" 2>/dev/null
  sleep 0.5
  token=$(json "$tmp/out-$name/trials/0001/live.json" "o['token']")
  [[ -n $token && -n $(token_pids "$token") ]] ||
    { bad "$name: no escaped sleeper outlived the driver (token '$token'): nothing to show"; return; }
  "$@" "$bin" run "$tmp/$name-next.yaml" --out "$tmp/out-$name" --json >"$tmp/$name-next.json" 2>&1 ||
    bad "$name: the next run failed: $(tail -3 "$tmp/$name-next.json")"
  [[ -z $(token_pids "$token") && $(marked "$tmp/$name") == 0 ]] ||
    { bad "$name: left behind after the next run: $(token_pids "$token")"; return; }
  json "$tmp/$name-next.json" "o['cleanup_notes']" | grep -q "0001: its driver is gone; killed [1-9]" ||
    { bad "$name: the next run did not say what it swept"; return; }
  [[ ! -e $tmp/out-$name/trials/0001/live.json ]] && ok || bad "$name: the dead trial's record stayed"
}

if [[ $(id -u) -eq 0 ]]; then
  escape escape-cgroup
  # Unprivileged: no cgroup can be made; the token sweep through /proc does the work.
  if command -v setpriv >/dev/null; then
    owner=65534 escape escape-user setpriv --reuid=65534 --regid=65534 --clear-groups --reset-env env PATH="$PATH"
    grep -q "token sweep only" "$tmp"/out-escape-user/trials/0002/outcome.json ||
      bad "escape-user: an unprivileged trial claims a cgroup"
  fi
else
  escape escape-user
fi

# limit CASE MODE LIMIT: the trial is stopped by the limit and says so.
limit() {
  local name=$1 mode=$2 want=$3 t0 took
  spec "$name" "$mode" "{memory: 256MB, max_procs: 64, hang_after: 30s, trial_timeout: 60s}"
  t0=$(date +%s.%N)
  "$bin" run "$tmp/$name.yaml" --out "$tmp/out-$name" --json >"$tmp/$name.json" 2>"$tmp/$name.err"
  local rc=$?
  took=$(py "print(round($(date +%s.%N) - $t0, 1))")
  echo "$name: stopped after ${took}s"
  [[ $rc == 1 ]] || { bad "$name: exit $rc, want 1 (failed)"; return; }
  [[ $(json "$tmp/$name.json" "o['resource_limit']['limit']") == "$want" ]] ||
    { bad "$name: not reported as $want: $(json "$tmp/$name.json" "o['reason']")"; return; }
  [[ $(json "$tmp/$name.json" "o['diagnosis']['signature']['category']") == resource_limit ]] ||
    { bad "$name: the diagnosis blames something else"; return; }
  json "$tmp/$name.json" "o['reason']" | grep -q "^resource limit: $want" || bad "$name: reason"
  [[ $(marked "$tmp/$name") == 0 && -z $(token_pids "$(json "$tmp/$name.json" "o['token']")") ]] &&
    ok || bad "$name: processes left behind"
}
if [[ $(id -u) -eq 0 ]]; then
  limit forkbomb forkbomb limits.max_procs
  limit memhog memhog limits.memory
  [[ $(json "$tmp/memhog.json" "o['resource_limit']['rank']") == 1 ]] && ok ||
    bad "memhog: the rank the OOM killer hit is not named"
else
  echo "SKIP: the limit cases need root (cgroups); without it limits are not enforced"
fi

# bounded NAME MODE LIMITS WANT_RC: run while sampling the driver's peak RSS (VmHWM, kB).
bounded() {
  local name=$1 driver hwm=0 v
  spec "$name" "$2" "$3"
  "$bin" run "$tmp/$name.yaml" --out "$tmp/out-$name" --json >"$tmp/$name.json" 2>"$tmp/$name.err" &
  driver=$!
  while kill -0 "$driver" 2>/dev/null; do
    v=$(awk '/VmHWM/ {print $2}' "/proc/$driver/status" 2>/dev/null)
    [[ -n $v && $v -gt $hwm ]] && hwm=$v
    sleep 0.2
  done
  wait "$driver"
  local rc=$?
  echo "$name: driver peak RSS ${hwm} kB, $(json "$tmp/$name.json" "o['duration_s']") s"
  [[ $rc == "$4" ]] || bad "$name: exit $rc, want $4: $(tail -3 "$tmp/$name.err")"
  ((hwm < 64 * 1024)) || bad "$name: the driver's peak RSS was $hwm kB"
  local size
  size=$(du -cb "$tmp/out-$name"/trials/*/node0/rank*[rt] | tail -1 | cut -f1)
  ((size < 8 * 1024 * 1024 + 4 * 1024 * 1024)) || bad "$name: $size bytes on disk for an 8MB cap"
  [[ $(json "$tmp/$name.json" "o['log_cap_hit']") == True ]] || bad "$name: the cap was not reported"
}
bounded longline longline "{log_cap: 8MB, trial_timeout: 120s}" 0
[[ $(json "$tmp/longline.json" "o['ranks'][1]['bytes']") -ge $((10 << 30)) ]] && ok ||
  bad "longline: the rank's 10 GB were not all read"
grep -q "the end of rank 1" "$tmp"/out-longline/trials/*/node0/rank1.stderr && ok ||
  bad "longline: the last line was lost"
bounded garbage garbage "{log_cap: 8MB}" 1
json "$tmp/garbage.json" "o['diagnosis']['root_cause']['message']" | grep -q "after the noise" && ok ||
  bad "garbage: the error after the noise was not diagnosed: $(json "$tmp/garbage.json" "o['reason']")"

finish launch/resources
