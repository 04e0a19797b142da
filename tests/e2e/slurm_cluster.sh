#!/usr/bin/env bash
# Issue #9, the slurm launcher on a real Slurm cluster this test starts itself: a private munged,
# slurmctld and two slurmd nodes (n0, n1) on this machine, all on their own ports and socket. A
# worker-zoo spec with a node-dependent fault is reduced through the slurm launcher and must
# reach the same minimum as with the local launcher; inside an allocation (salloc -N2) two
# independent trials share it in parallel (--jobs 2). Afterwards: no job or step left, no
# process of any trial left, every daemon the test started stopped.
# Exit 77 (skipped) without root or the Slurm/munge daemons.
# Usage: slurm_cluster.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$1
root=$2
tmp=$(mktemp -d /tmp/ddpb-slurm.XXXXXX)
at_exit rm -rf "$tmp"
slurm_cluster "$tmp"

spec=$root/tests/zoo/worker/two_nodes.yaml
sed 's/^limits:/launcher: {kind: slurm, hosts: [n0, n1]}\nlimits:/' "$spec" >"$tmp/slurm.yaml"
grep -q "kind: slurm" "$tmp/slurm.yaml" || { echo "FAIL: could not write the slurm spec"; exit 1; }

"$bin" "$spec" --out "$tmp/local" --quiet --confirm 1 >/dev/null 2>&1 || bad "local reduction exited $?"
"$bin" "$tmp/slurm.yaml" --out "$tmp/slurm" --quiet --confirm 1 >/dev/null 2>"$tmp/slurm.err" ||
  { bad "slurm reduction exited $?"; tail -5 "$tmp/slurm.err" >&2; }
/usr/bin/python3 -c '
import glob, json, sys
a = json.load(open(sys.argv[1] + "/local/report.json"))
b = json.load(open(sys.argv[1] + "/slurm/report.json"))
assert a["minimal"] == b["minimal"], (a["minimal"], b["minimal"])
assert a["signature"]["category"] == b["signature"]["category"], (a["signature"], b["signature"])
launchers = {json.load(open(f))["launcher"] for f in glob.glob(sys.argv[1] + "/slurm/trials/*/outcome.json")}
assert launchers == {"slurm"}, launchers
' "$tmp" && ok || bad "the slurm launcher reached a different minimum than the local one"
grep -q "srun" "$tmp"/slurmctld.log 2>/dev/null || grep -q "sched: _slurm_rpc_allocate_resources\|_job_complete\|StepId" "$tmp/slurmctld.log" && ok ||
  bad "slurmctld saw no job: the trials did not go through Slurm"

# Inside an allocation, independent trials share it in parallel (ddmin's candidates over the
# components of a fault that needs two of them, two at a time).
sed 's/^limits:/launcher: {kind: slurm}\nlimits:/' "$root/tests/zoo/worker/two_components.yaml" >"$tmp/pair.yaml"
# In the background: a foreground salloc would hold back the traps until it ends.
salloc -N2 --quiet "$bin" "$tmp/pair.yaml" --out "$tmp/alloc" --quiet --confirm 1 --jobs 2 >/dev/null 2>"$tmp/alloc.err" &
wait $! || { bad "reduction inside salloc exited $?"; tail -5 "$tmp/alloc.err" >&2; }
/usr/bin/python3 -c '
import glob, json, sys
spans = []
for f in glob.glob(sys.argv[1] + "/alloc/trials/*/outcome.json"):
    o = json.load(open(f))
    spans.append((o["started_unix"], o["started_unix"] + o["duration_s"]))
spans.sort()
overlap = any(b[0] < a[1] for a, b in zip(spans, spans[1:]))
r = json.load(open(sys.argv[1] + "/alloc/report.json"))
assert overlap, "no two trials ran at the same time"
assert r["minimal"]["components"] == ["dropout", "layernorm"], r["minimal"]
' "$tmp" && ok || bad "trials did not share the allocation in parallel"

# An allocation that just ended may show as completing (CG) for a moment: wait for Slurm to
# finish it, up to 20 s, then nothing may be left.
for _ in $(seq 100); do [[ -z $(squeue -h 2>/dev/null) ]] && break; sleep 0.2; done
[[ -z $(squeue -h 2>/dev/null) ]] && ok || bad "jobs or steps left in Slurm: $(squeue)"
left=$(for f in "$tmp"/*/trials/*/outcome.json; do token_pids "$(py 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$f")"; done | xargs)
[[ -z $left ]] && ok || bad "trial processes left behind: $left"
slurm_stop
sleep 0.5
alive=$(for pid in $(slurm_pids); do kill -0 "$pid" 2>/dev/null && echo "$pid"; done | xargs)
[[ -z $alive ]] && ok || bad "daemons still running: $alive"
finish slurm
