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
for tool in slurmctld slurmd srun salloc squeue munged; do
  if ! command -v "$tool" >/dev/null && [[ ! -x /usr/sbin/$tool ]]; then
    echo "SKIP: $tool not installed (slurm-wlm, munge)"
    exit 77
  fi
done
if [[ $(id -u) -ne 0 ]]; then
  echo "SKIP: starting slurmd needs root"
  exit 77
fi
export PATH=$PATH:/usr/sbin
tmp=$(mktemp -d /tmp/ddpb-slurm.XXXXXX)
base=$((17000 + (RANDOM % 200) * 10))
export SLURM_CONF=$tmp/slurm.conf
stop_daemons() {
  for pid in $(cat "$tmp"/*.pid "$tmp"/munge/pid 2>/dev/null); do kill "$pid" 2>/dev/null; done
  sleep 1
  for pid in $(cat "$tmp"/*.pid "$tmp"/munge/pid 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
}
trap 'stop_daemons; rm -rf "$tmp"' EXIT
mkdir -p "$tmp/munge" "$tmp/state" && chmod 700 "$tmp/munge"
head -c 1024 /dev/urandom >"$tmp/munge/key" && chmod 400 "$tmp/munge/key"
munged --force --socket="$tmp/munge/sock" --key-file="$tmp/munge/key" --pid-file="$tmp/munge/pid" \
  --log-file="$tmp/munge/log" --seed-file="$tmp/munge/seed" || { echo "FAIL: munged did not start"; exit 1; }
host=$(hostname)
cat >"$SLURM_CONF" <<CONF
ClusterName=ddpb$$
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool-%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd-%n.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=n0 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 2)) CPUs=8 State=UNKNOWN
NodeName=n1 NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + 3)) CPUs=8 State=UNKNOWN
PartitionName=debug Nodes=n0,n1 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
slurmctld && slurmd -N n0 && slurmd -N n1 || { echo "FAIL: Slurm daemons did not start"; tail "$tmp"/*.log; exit 1; }
for _ in $(seq 50); do [[ $(sinfo -h -o %t 2>/dev/null | sort -u) == idle ]] && break; sleep 0.2; done
[[ $(sinfo -h -o %D 2>/dev/null) == 2 ]] || { echo "FAIL: 2 idle nodes expected: $(sinfo 2>&1)"; exit 1; }

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
salloc -N2 --quiet "$bin" "$tmp/pair.yaml" --out "$tmp/alloc" --quiet --confirm 1 --jobs 2 >/dev/null 2>"$tmp/alloc.err" ||
  { bad "reduction inside salloc exited $?"; tail -5 "$tmp/alloc.err" >&2; }
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

sleep 1
[[ -z $(squeue -h 2>/dev/null) ]] && ok || bad "jobs or steps left in Slurm: $(squeue)"
left=$(grep -lsz "DDPBISECT_TRIAL_TOKEN=" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | xargs)
[[ -z $left ]] && ok || bad "trial processes left behind: $left"
stop_daemons
sleep 0.5
alive=$(for pid in $(cat "$tmp"/*.pid "$tmp"/munge/pid 2>/dev/null); do kill -0 "$pid" 2>/dev/null && echo "$pid"; done | xargs)
[[ -z $alive ]] && ok || bad "daemons still running: $alive"
finish slurm
