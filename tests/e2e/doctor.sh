#!/usr/bin/env bash
# Issue #10: `ddpbisect doctor` on real runs, one case per finding. Without root: a healthy spec
# (exit 0, Gloo bandwidth over 2 and 4 ranks), a taken MASTER_PORT, an unreachable master
# address, a workload that fails on one process, bad input. With root, two simulated nodes
# through the prefix launcher, node 1's wrapper changing one thing: its mount namespace hides
# the data folder, libfaketime moves its clock 90 s ahead, or a different torch is first on its
# PYTHONPATH; a pass-through wrapper for both nodes must find nothing.
# Usage: doctor.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
root=$2
tmp=$(mktemp -d)
listener=""
trap '[[ -n $listener ]] && kill $listener 2>/dev/null; rm -rf "$tmp"' EXIT
# finding FILE STATUS CHECK NODE: the doctor JSON in FILE has that finding.
finding() {
  /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
status, check, node = sys.argv[2], sys.argv[3], sys.argv[4]
hits = [f for f in d["findings"] if f["status"] == status and f["check"] == check
        and (node == "-" or f["node"] == int(node))]
assert hits, "no %s %s on node %s in: %s" % (status, check, node,
    [(f["status"], f["check"], f["node"], f["message"]) for f in d["findings"] if f["status"] != "pass"])
' "$@"
}
cat >"$tmp/two.yaml" <<YAML
version: 1
name: doctor-two
workload:
  builtin:
    model: [linear, head]
    dataset: {kind: synthetic, samples: 16}
    params: {steps: 2}
stages:
  - {name: single, nodes: 1, procs_per_node: 1}
  - {name: pair, nodes: 1, procs_per_node: 2}
YAML

# Healthy: exit 0; the Gloo probe runs across 4 ranks (demo) and 2 ranks and prints bandwidth.
"$bin" doctor "$root/configs/demo.yaml" --out "$tmp/d1" --json >"$tmp/demo.json" 2>"$tmp/demo.err"; rc=$?
[[ $rc == 0 ]] && /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["summary"]["fail"] == 0, d["findings"]
rows = d["comm"]["gloo"]["rows"]
assert rows and rows[-1]["world"] == 4 and rows[-1]["busbw_GBps"] > 0, rows
assert any(f["check"] == "sanity" and f["status"] == "pass" for f in d["findings"])
assert len(d["nodes"]) == 2 and all(n.get("torch") for n in d["nodes"]), d["nodes"]
' "$tmp/demo.json" && ok || { bad "healthy demo: exit $rc"; tail -5 "$tmp/demo.err"; }
# Where the helpers were found (issue 30), and a missing one the spec needs.
/usr/bin/python3 -c '
import json, sys
f = [f for f in json.load(open(sys.argv[1]))["findings"] if f["check"] == "helpers"]
assert len(f) == 1 and f[0]["status"] == "pass" and "worker " + sys.argv[2] + ";" in f[0]["message"], f
' "$tmp/demo.json" "$(dirname "$(realpath "$bin")")/ddpbisect-worker" && ok || bad "the helpers finding of the demo"
DDPBISECT_WORKER=$tmp/no-worker "$bin" doctor "$tmp/two.yaml" --out "$tmp/d6" --no-sanity --no-comm --json \
  >"$tmp/noworker.json" 2>/dev/null; rc=$?
[[ $rc == 1 ]] && finding "$tmp/noworker.json" fail helpers - && grep -q "no-worker (missing)" "$tmp/noworker.json" &&
  ok || bad "a missing worker: exit $rc"
"$bin" doctor "$tmp/two.yaml" --out "$tmp/d2" --no-sanity >"$tmp/two.out" 2>&1; rc=$?
[[ $rc == 0 ]] && grep -q "over 2 ranks" "$tmp/two.out" && grep -qE "^ +16777216 +4194304 " "$tmp/two.out" && ok ||
  { bad "Gloo probe across 2 ranks: exit $rc"; cat "$tmp/two.out" >&2; }

# A taken port: something already listens on the MASTER_PORT the user pinned.
port=$((21000 + RANDOM % 9000))
/usr/bin/python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1); print("up", flush=True); time.sleep(300)' "$port" >"$tmp/listener" &
listener=$!
for _ in $(seq 50); do grep -q up "$tmp/listener" && break; sleep 0.1; done
MASTER_PORT=$port "$bin" doctor "$tmp/two.yaml" --out "$tmp/d3" --no-sanity --no-comm --json >"$tmp/port.json" 2>/dev/null; rc=$?
[[ $rc == 1 ]] && finding "$tmp/port.json" fail master.port 0 && ok || bad "taken port: exit $rc"
kill $listener; listener=""

# An unreachable master address (TEST-NET-1: on no host).
sed 's/^stages:/launcher: {kind: local, master_addr: 192.0.2.1}\nstages:/' "$tmp/two.yaml" >"$tmp/far.yaml"
"$bin" doctor "$tmp/far.yaml" --out "$tmp/d4" --no-sanity --no-comm --json >"$tmp/far.json" 2>/dev/null; rc=$?
[[ $rc == 1 ]] && finding "$tmp/far.json" fail master.addr 0 && ok || bad "unreachable master address: exit $rc"

# The workload fails on a single process.
sed 's/^    params: {steps: 2}/    params: {steps: 2}\n    faults: [{kind: raise, message: broken from the start}]/' "$tmp/two.yaml" >"$tmp/broken.yaml"
"$bin" doctor "$tmp/broken.yaml" --out "$tmp/d5" --no-comm --json >"$tmp/broken.json" 2>/dev/null; rc=$?
[[ $rc == 1 ]] && finding "$tmp/broken.json" fail sanity - && ok || bad "single-process failure: exit $rc"

# Bad input never runs anything.
"$bin" doctor "$tmp/nope.yaml" >/dev/null 2>"$tmp/e"; rc=$?
[[ $rc == 2 ]] && grep -q "nope.yaml" "$tmp/e" && ok || bad "missing spec: exit $rc"

# Per-node differences: two simulated nodes behind wrapper scripts (the prefix launcher).
if [[ $(id -u) -ne 0 ]] || ! command -v unshare >/dev/null; then
  echo "SKIP: per-node cases need root (mount namespaces)"
else
  mkdir -p "$tmp/hosts" "$tmp/data" "$tmp/state/ckpt" "$tmp/fake/torch"
  echo "x,y" >"$tmp/data/train.csv"
  cat >"$tmp/fake/torch/__init__.py" <<'PY'
__version__ = "2.3.1"
class version: cuda = None
class cuda:
    is_available = staticmethod(lambda: False)
    device_count = staticmethod(lambda: 0)
class backends:
    class cudnn: is_available = staticmethod(lambda: False)
class distributed:
    is_available = staticmethod(lambda: True)
    is_gloo_available = staticmethod(lambda: True)
PY
  printf '#!/bin/sh\nexec "$@"\n' >"$tmp/hosts/n0"
  cat >"$tmp/nodes.yaml" <<YAML
version: 1
name: doctor-nodes
workload:
  command: [/usr/bin/python3, -c, "print('ok')", $tmp/data/train.csv]
  cwd: $tmp
  state: [$tmp/state/ckpt]
stages:
  - {name: two, nodes: 2, procs_per_node: 1}
launcher: {kind: prefix, hosts: [n0, n1], prefix: "$tmp/hosts/{host}"}
YAML
  case_node1() {  # case_node1 NAME WRAPPER_BODY STATUS CHECK
    printf '#!/bin/sh\n%s\n' "$2" >"$tmp/hosts/n1"
    chmod +x "$tmp/hosts/n0" "$tmp/hosts/n1"
    "$bin" doctor "$tmp/nodes.yaml" --out "$tmp/d-$1" --no-sanity --no-comm --json >"$tmp/$1.json" 2>"$tmp/$1.err"; rc=$?
    if [[ $3 == none ]]; then
      [[ $rc == 0 ]] && ok || { bad "$1: exit $rc, want 0"; cat "$tmp/$1.json" "$tmp/$1.err" | tail -20 >&2; }
    else
      [[ $rc == 1 ]] && finding "$tmp/$1.json" "$3" "$4" 1 && ok || { bad "$1: exit $rc"; tail -5 "$tmp/$1.err" >&2; }
    fi
  }
  case_node1 same 'exec "$@"' none -
  case_node1 missing-data "exec unshare -m sh -c 'mount -t tmpfs none $tmp/data && exec \"\$@\"' sh \"\$@\"" fail paths
  # A workload.state folder missing on node 1 only (validation checks it only for local ranks).
  case_node1 missing-state "exec unshare -m sh -c 'mount -t tmpfs none $tmp/state && exec \"\$@\"' sh \"\$@\"" fail paths
  case_node1 clock "exec env LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 FAKETIME=+90s \"\$@\"" fail clock
  case_node1 version "exec env PYTHONPATH=$tmp/fake \"\$@\"" fail versions.torch
fi

finish doctor
