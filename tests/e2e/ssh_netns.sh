#!/usr/bin/env bash
# Issue #9, the ssh launcher on real hosts: two network namespaces on a bridge, each running its
# own sshd (started by this test with a generated host key, on the namespace's address); the
# driver reaches them over ssh with a generated client key, in batch mode, over one connection
# master per host. A healthy 2x2 job passes across them; a host-dependent fault (h1's DATA_ROOT
# points nowhere) is reduced to exactly 2 nodes. Afterwards: no process left in either namespace,
# no ssh connection master left, the sshds stopped.
# Exit 77 (skipped) when namespaces, a bridge or sshd are not available.
# Usage: ssh_netns.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
root=$2
tag=ds$$
net=$((RANDOM % 200 + 20))
tmp=$(mktemp -d)
at_exit rm -rf "$tmp"
netns_bridge "$tag" "$net"
netns_sshd "$tmp" "$net"
opts=("${ssh_opts[@]}")
ssh -o BatchMode=yes "${opts[@]}" "10.78.$net.2" true 2>"$tmp/err" || { echo "FAIL: sshd in $h1 unreachable: $(cat "$tmp/err" "$tmp/sshd_2.log")"; exit 1; }

mkdir -p "$tmp/data" && echo "0-15" >"$tmp/data/index.txt"
write_spec() {  # write_spec FILE H1_DATA_ROOT
  cat >"$1" <<YAML
version: 1
name: ssh-host-data
workload:
  command: [/usr/bin/python3, $root/tests/e2e/programs/host_data.py]
  cwd: $tmp
  env: {PYTHONPATH: $root/python, DATA_ROOT: $tmp/data}
  samples: 16
  params: {steps: 4}
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: node, nodes: 1, procs_per_node: 2}
  - {name: multinode, nodes: 2, procs_per_node: 2}
launcher:
  kind: ssh
  hosts: [10.78.$net.1, 10.78.$net.2]
  options: [-i, $tmp/client_key, -o, StrictHostKeyChecking=no, -o, UserKnownHostsFile=/dev/null, -o, LogLevel=ERROR, -l, root]
  env:
    10.78.$net.1: {GLOO_SOCKET_IFNAME: eth0}
    10.78.$net.2: {GLOO_SOCKET_IFNAME: eth0, DATA_ROOT: $2}
limits: {trial_timeout: 60s}
YAML
}
leftovers() { netns_leftovers sshd; }
masters() { pgrep -f "ControlPath=/tmp/ddpbisect-ssh" | xargs; }

write_spec "$tmp/good.yaml" "$tmp/data"
"$bin" run "$tmp/good.yaml" --out "$tmp/good" --json >"$tmp/good.json" 2>"$tmp/good.err"; rc=$?
/usr/bin/python3 -c '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["status"] == "pass" and o["launcher"] == "ssh", (o["status"], o["reason"])
spaces = {}
for r in o["ranks"]:
    line = [l for l in open(r["stdout"]) if l.startswith("netns")][0]
    spaces.setdefault(r["node"], set()).add(line.split()[1])
assert len(spaces) == 2 and spaces[0] != spaces[1], spaces
' "$tmp/good.json" && [[ $rc == 0 ]] && ok || { bad "healthy 2x2 over ssh: exit $rc"; tail -20 "$tmp/good.err" "$tmp/good.json" >&2; }
[[ -z $(leftovers) ]] && ok || bad "processes left on the hosts after a passing trial: $(leftovers)"
[[ -z $(masters) ]] && ok || bad "ssh connection masters outlived the driver: $(masters)"

write_spec "$tmp/bad.yaml" /nonexistent/ddpbisect-data
"$bin" "$tmp/bad.yaml" --out "$tmp/red" --quiet --confirm 1 >"$tmp/red.out" 2>"$tmp/red.err" ||
  { bad "reduction exited $?"; tail -5 "$tmp/red.err" >&2; }
/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
m, s = r["minimal"], r["signature"]
assert (m["nodes"], m["procs_per_node"]) == (2, 1), m
assert s["exception"] == "FileNotFoundError", s
' "$tmp/red/report.json" && ok || bad "the host-dependent fault was not reduced to exactly 2 nodes over ssh"
[[ -z $(leftovers) ]] && ok || bad "processes left on the hosts after the reduction: $(leftovers)"
[[ -z $(masters) ]] && ok || bad "ssh connection masters outlived the reduction: $(masters)"
# The connection was reused: far fewer sshd sessions than rank launches.
sessions=$(grep -c "Accepted publickey" "$tmp"/sshd_*.log 2>/dev/null | awk -F: '{s += $2} END {print s + 0}')
launches=$(/usr/bin/python3 -c '
import glob, json, sys
print(sum(len(json.load(open(f))["ranks"]) for f in glob.glob(sys.argv[1] + "/red/trials/*/outcome.json")))' "$tmp")
echo "ssh: $launches rank launches over $sessions ssh logins"
[[ $sessions -gt 0 && $sessions -lt $launches ]] && ok || bad "no connection reuse: $sessions logins for $launches launches"

# A hang on a remote rank: the stack request travels over ssh and the stacks come back.
cat >"$tmp/hang.yaml" <<YAML
version: 1
name: ssh-hang
workload:
  command: [/usr/bin/python3, $root/tests/e2e/programs/ddp_hang.py]
  cwd: $tmp
stages:
  - {name: two, nodes: 2, procs_per_node: 1}
launcher:
  kind: ssh
  hosts: [10.78.$net.1, 10.78.$net.2]
  options: [-i, $tmp/client_key, -o, StrictHostKeyChecking=no, -o, UserKnownHostsFile=/dev/null, -o, LogLevel=ERROR, -l, root]
  env:
    10.78.$net.1: {GLOO_SOCKET_IFNAME: eth0}
    10.78.$net.2: {GLOO_SOCKET_IFNAME: eth0}
limits: {trial_timeout: 60s, hang_after: 3s}
YAML
"$bin" run "$tmp/hang.yaml" --out "$tmp/hang" --json >"$tmp/hang.json" 2>/dev/null
py '
import json, sys
o = json.load(open(sys.argv[1]))
assert o["hang_declared_s"] is not None, o["reason"]
stacks = {r["rank"]: open(r["stderr"]).read() for r in o["ranks"]}
assert "wait_for_a_signal_that_never_comes" in stacks[1], stacks[1][-800:]
' "$tmp/hang.json" && ok || bad "a remote hang: no stacks came back over ssh"
[[ -z $(leftovers) ]] && ok || bad "processes left on the hosts after the hang: $(leftovers)"

finish ssh/netns
