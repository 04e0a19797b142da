#!/usr/bin/env bash
# Warm starts (`workload.preload`, issue #20) through the real binary, with a light preload (json)
# so that each run takes a fraction of a second: a rank forked by the server gets its argv, its
# exit code, its signal, the trial's cgroup and its isolated view of the cwd; what cannot be
# forked (`python -c`) starts cold and says so; nothing is left behind.
# usage: warm_start.sh DDPBISECT
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
bin=$1
tmp=$(mktemp -d)
at_exit rm -rf "$tmp"
mkdir -p "$tmp/work"
cat >"$tmp/work/rank.py" <<'EOF'
import os, signal, sys
parent = open("/proc/%d/cmdline" % os.getppid(), "rb").read().replace(b"\0", b" ").decode()
print("PARENT", "warm-server" if "ddpbisect_agent.warm" in parent else "other")
print("ARGV", " ".join(sys.argv[1:]))
print("CGROUP", open("/proc/self/cgroup").read().strip().replace("\n", " "))
print("TOKEN", os.environ.get("DDPBISECT_TRIAL_TOKEN", ""))
marker = "marker.%s.txt" % os.environ["RANK"]  # the ranks of one trial share one view
seen = os.path.exists(marker)
open(marker, "w").write("written by a trial\n")
print("MARKER", "seen" if seen else "fresh", flush=True)
mode = sys.argv[1]
if mode == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "raise":
    raise ValueError("planted in rank.py")
sys.exit(int(mode))
EOF
spec() {  # spec NAME COMMAND-JSON
  cat >"$tmp/$1.yaml" <<EOF
workload:
  command: $2
  cwd: $tmp/work
  preload: [json, no_such_module_here]
stages: [{name: two, nodes: 1, procs_per_node: 2}]
limits: {trial_timeout: 60s}
EOF
}
field() {  # field OUT EXPR: a value from the trial's outcome.json
  py "import json,sys; o=json.load(open(sys.argv[1]+'/trials/0001/outcome.json')); print($2)" "$1"
}

spec exit3 '[python3, rank.py, "3"]'
"$bin" run "$tmp/exit3.yaml" --out "$tmp/o1" >/dev/null 2>&1
out="$tmp/o1/trials/0001/node0"
grep -q "PARENT warm-server" "$out/rank0.stdout" && ok || bad "rank 0 was not forked by the server: $(cat "$out/rank0.stdout" "$out/rank0.stderr")"
grep -q "PARENT warm-server" "$out/rank1.stdout" && ok || bad "rank 1 was not forked by the server"
grep -q "cold start" "$out/rank0.stderr" && bad "rank 0 started cold: $(cat "$out/rank0.stderr")" || ok
grep -q "^ARGV 3$" "$out/rank0.stdout" && ok || bad "argv not passed: $(grep ARGV "$out/rank0.stdout")"
[[ $(field "$tmp/o1" "[r['exit_code'] for r in o['ranks']]") == "[3, 3]" ]] && ok || bad "exit codes: $(field "$tmp/o1" "[r['exit_code'] for r in o['ranks']]")"
token=$(sed -n 's/^TOKEN //p' "$out/rank0.stdout")
if [[ $(field "$tmp/o1" "o['containment']") == cgroup* ]]; then
  grep -q "CGROUP .*ddpbisect-$token" "$out/rank0.stdout" && ok || bad "the forked rank is not in the trial's cgroup: $(grep CGROUP "$out/rank0.stdout")"
fi
grep -q "cannot preload no_such_module_here: ModuleNotFoundError" "$tmp/o1/warm-server.log" && ok || bad "a module that cannot be preloaded is not named in the server's log: $(cat "$tmp/o1/warm-server.log")"
[[ -e "$tmp/work/marker.0.txt" ]] && bad "a warm rank wrote into the real cwd" || ok

# A second run: the first one's file is not there (the view is the trial's own).
"$bin" run "$tmp/exit3.yaml" --out "$tmp/o2" >/dev/null 2>&1
grep -q "MARKER fresh" "$tmp/o2/trials/0001/node0/rank0.stdout" && ok || bad "a trial saw an earlier trial's file"

spec kill '[python3, rank.py, kill]'
"$bin" run "$tmp/kill.yaml" --out "$tmp/o3" >/dev/null 2>&1
[[ $(field "$tmp/o3" "[r['signal_number'] for r in o['ranks']]") == "[9, 9]" ]] && ok || bad "signal not relayed: $(field "$tmp/o3" "[(r['exit_code'], r['signal_number']) for r in o['ranks']]")"

spec raise '[python3, rank.py, raise]'
"$bin" run "$tmp/raise.yaml" --out "$tmp/o4" >/dev/null 2>&1
err="$tmp/o4/trials/0001/node0/rank0.stderr"
grep -q 'File ".*rank.py", line [0-9]*, in <module>' "$err" && ok || bad "no traceback from the script: $(cat "$err")"
grep -q "warm.py\|runpy" "$err" && bad "the traceback shows the server's frames: $(cat "$err")" || ok
[[ $(field "$tmp/o4" "o['diagnosis']['root_cause']['exception']") == ValueError ]] && ok || bad "diagnosis: $(field "$tmp/o4" "o['diagnosis']['root_cause']")"

spec cold '[python3, -c, "import sys; print(\"COLD\"); sys.exit(4)"]'
"$bin" run "$tmp/cold.yaml" --out "$tmp/o5" >"$tmp/o5.log" 2>&1
grep -q "warning: workload.preload: ranks start cold" "$tmp/o5.log" && ok || bad "no warning for a command that cannot be forked: $(cat "$tmp/o5.log")"
[[ $(field "$tmp/o5" "[r['exit_code'] for r in o['ranks']]") == "[4, 4]" ]] && ok || bad "cold command: $(field "$tmp/o5" "[r['exit_code'] for r in o['ranks']]")"

# Nothing left behind: no server, no forked rank.
left=$(py "
import os, sys
me = {str(os.getpid()), str(os.getppid())}
for p in os.listdir('/proc'):
    try:
        if p.isdigit() and p not in me and sys.argv[1].encode() in open('/proc/%s/cmdline' % p, 'rb').read():
            print(p)
    except OSError:
        pass" "$tmp/o" | xargs)
[[ -z $left ]] && ok || bad "left behind: $left"
finish warm_start
