#!/usr/bin/env bash
# Issue #9, real multi-host through the prefix launcher: two network namespaces joined by a veth
# pair are two hosts (h0 10.77.X.1, h1 10.77.X.2); ranks on different hosts rendezvous and
# all-reduce over Gloo across the link. h1's configuration points DATA_ROOT at a folder that does
# not exist there: the reducer must end at exactly 2 nodes. After every trial no process may be
# left in either namespace; the namespaces are removed at the end.
# Exit 77 (skipped) when network namespaces cannot be made (not root, no iproute2).
# Usage: netns_prefix.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
root=$2
tag=ddpb$$
net=$((RANDOM % 200 + 20))
tmp=$(mktemp -d)
at_exit rm -rf "$tmp"
netns_pair "$tag" "$net"

mkdir -p "$tmp/data" && echo "0-15" >"$tmp/data/index.txt"
write_spec() {  # write_spec FILE H1_DATA_ROOT
  cat >"$1" <<YAML
version: 1
name: netns-host-data
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
  kind: prefix
  hosts: [$h0, $h1]
  prefix: "ip netns exec {host}"
  master_addr: 10.77.$net.1
  env:
    $h0: {GLOO_SOCKET_IFNAME: $tag-a}
    $h1: {GLOO_SOCKET_IFNAME: $tag-b, DATA_ROOT: $2}
limits: {trial_timeout: 60s}
YAML
}
leftovers() { netns_leftovers; }

# 1. A healthy 2x2 job across the two hosts passes: Gloo works over the veth link.
write_spec "$tmp/good.yaml" "$tmp/data"
"$bin" run "$tmp/good.yaml" --out "$tmp/good" --json >"$tmp/good.json" 2>"$tmp/good.err"; rc=$?
/usr/bin/python3 -c '
import json, sys, glob
o = json.load(open(sys.argv[1]))
assert o["status"] == "pass" and o["launcher"] == "prefix", (o["status"], o["reason"])
spaces = {}
for r in o["ranks"]:
    line = [l for l in open(r["stdout"]) if l.startswith("netns")][0]
    spaces.setdefault(r["node"], set()).add(line.split()[1])
assert len(spaces) == 2 and all(len(v) == 1 for v in spaces.values()), spaces
assert spaces[0] != spaces[1], "both nodes ran in the same network namespace"
' "$tmp/good.json" && [[ $rc == 0 ]] && ok || { bad "healthy 2x2 across namespaces: exit $rc"; cat "$tmp/good.err" "$tmp/good.json" | tail -20 >&2; }
[[ -z $(leftovers) ]] && ok || bad "processes left in the namespaces after a passing trial: $(leftovers)"

# 2. h1 lacks the data: the reduction ends at exactly 2 nodes, 1 rank each.
write_spec "$tmp/bad.yaml" /nonexistent/ddpbisect-data
"$bin" "$tmp/bad.yaml" --out "$tmp/red" --quiet --confirm 1 >"$tmp/red.out" 2>"$tmp/red.err" ||
  { bad "reduction exited $?"; tail -5 "$tmp/red.err" >&2; }
/usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
m, s = r["minimal"], r["signature"]
assert (m["nodes"], m["procs_per_node"]) == (2, 1), m
# a rank on h1, or both when they failed alike (in one read of their pipes)
assert s["exception"] == "FileNotFoundError" and s["ranks"] and min(s["ranks"]) >= 2, s
assert m["params"]["steps"] == 1, m
' "$tmp/red/report.json" && ok || bad "the node-dependent fault was not reduced to exactly 2 nodes"
[[ -z $(leftovers) ]] && ok || bad "processes left in the namespaces after the reduction: $(leftovers)"

finish netns/prefix
