# Shared by the end-to-end scripts (source it): pass/fail counters, the Python that has torch,
# the closing line, process counting through /proc, cleanup on exit, and the multi-host setups
# (network namespaces, sshd in them, a private Slurm cluster). A script ends with `finish NAME`,
# which exits non-zero on any failure.
fails=0
passed=0
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { passed=$((passed + 1)); }
py() { /usr/bin/python3 -c "$@"; }
finish() {
  echo "$1: $passed passed, $fails failed"
  [[ $fails -eq 0 ]]
}

# Cleanup: `at_exit CMD...` queues a command; they run last-in first-out when the script exits
# (also on SIGINT/SIGTERM, which end the script through the EXIT trap).
_at_exit=()
at_exit() { _at_exit+=("$*"); }
_run_at_exit() {
  local i
  for ((i = ${#_at_exit[@]} - 1; i >= 0; i--)); do eval "${_at_exit[i]}" 2>/dev/null; done
}
trap _run_at_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

skip() { echo "SKIP: $*"; exit 77; }

# trial_story OUT: one line per trial of a reduction's journal, to stderr: what a failed
# reduction tried and what each trial was judged, so a red CI log says why without the files.
trial_story() {
  py '
import json, sys
for line in open(sys.argv[1] + "/journal.jsonl"):
    o = json.loads(line)
    if o.get("type") != "trial": continue
    c, s = o["config"], o.get("signature") or {}
    print("  trial", o["dir"][-4:], c["nodes"], "x", c["procs_per_node"], "samples", c["samples"],
          o["status"], "%.1f s" % o["duration_s"], s.get("category", ""), s.get("ranks", ""),
          o["text"].split("\n")[0][:120], file=sys.stderr)
' "$1" || echo "  (no journal in $1)" >&2
}

# zoo_case_reduces_here ROOT PYTHONPATH WHO: the rank_exception zoo case copied into the current
# folder (out of the checkout), its spec's PYTHONPATH into the checkout replaced by PYTHONPATH
# (removed when empty), reduced by the `ddpbisect` on PATH; ok when it reaches the minimum the
# spec's `# expect:` line names. For the install tests: WHO names the ddpbisect in a failure.
zoo_case_reduces_here() {
  local root=$1 pythonpath=$2 who=$3 want
  cp "$root/tests/zoo/python/rank_exception.py" "$root/tests/zoo/python/zoo_common.py" .
  if [[ -n $pythonpath ]]; then
    sed -e "s|PYTHONPATH: ../../../python|PYTHONPATH: $pythonpath|" \
      "$root/tests/zoo/python/rank_exception.yaml" >rank_exception.yaml
  else
    grep -v "PYTHONPATH: ../../../python" "$root/tests/zoo/python/rank_exception.yaml" >rank_exception.yaml
  fi
  want=$(grep -m1 "^# expect:" rank_exception.yaml)
  ddpbisect rank_exception.yaml --out out --quiet >/dev/null 2>err.txt ||
    bad "$who's reduction exited $?: $(tail -3 err.txt)"
  py '
import json, sys
r = json.load(open("out/report.json"))
want = dict(kv.split("=", 1) for kv in sys.argv[1].split(":", 1)[1].split())
m = r["minimal"]
assert str(m["nodes"]) == want["nodes"] and str(m["procs_per_node"]) == want["procs_per_node"], (m, want)
assert m["params"]["steps"] == int(want["steps"]), (m, want)
assert r["signature"]["exception"] == want["exception"], r["signature"]
' "$want" && ok || bad "$who's reduction did not reach the zoo's minimum"
}
need_root() { [[ $(id -u) -eq 0 ]] || skip "$1 needs root"; }

# Processes whose environment carries DDPBISECT_TRIAL_TOKEN=TOKEN (any token when none given).
token_pids() {
  local pat="DDPBISECT_TRIAL_TOKEN=${1:-}"
  grep -lsaz "^$pat" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | while read -r p; do
    [[ $p != "$$" ]] && echo "$p"
  done | xargs
}

# netns_pair TAG NET: two namespaces $h0, $h1 joined by a veth pair ($TAG-a in h0 as
# 10.77.NET.1, $TAG-b in h1 as 10.77.NET.2). Skips the script when they cannot be made.
netns_pair() {
  local tag=$1 net=$2
  need_root "network namespaces"
  command -v ip >/dev/null || skip "network namespaces need iproute2"
  h0=$tag-h0 h1=$tag-h1
  at_exit netns_remove "$h0" "$h1"
  ip netns add "$h0" 2>/dev/null && ip netns add "$h1" 2>/dev/null ||
    skip "cannot create network namespaces"
  ip link add "$tag-a" netns "$h0" type veth peer name "$tag-b" netns "$h1"
  ip -n "$h0" addr add "10.77.$net.1/24" dev "$tag-a"
  ip -n "$h1" addr add "10.77.$net.2/24" dev "$tag-b"
  for ns in "$h0" "$h1"; do ip -n "$ns" link set lo up; done
  ip -n "$h0" link set "$tag-a" up
  ip -n "$h1" link set "$tag-b" up
}

# netns_bridge TAG NET: two namespaces $h0, $h1 on a bridge $TAG-br (10.78.NET.254 here), each
# with eth0 at 10.78.NET.1 and 10.78.NET.2.
netns_bridge() {
  local tag=$1 net=$2 i=1 ns
  need_root "network namespaces"
  command -v ip >/dev/null || skip "network namespaces need iproute2"
  h0=$tag-h0 h1=$tag-h1
  at_exit ip link del "$tag-br"
  at_exit netns_remove "$h0" "$h1"
  ip link add "$tag-br" type bridge 2>/dev/null && ip netns add "$h0" 2>/dev/null &&
    ip netns add "$h1" 2>/dev/null || skip "cannot create a bridge and network namespaces"
  ip addr add "10.78.$net.254/24" dev "$tag-br"
  ip link set "$tag-br" up
  for ns in "$h0" "$h1"; do
    ip link add "$tag-v$i" type veth peer name eth0 netns "$ns"
    ip link set "$tag-v$i" master "$tag-br" up
    ip -n "$ns" addr add "10.78.$net.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    i=$((i + 1))
  done
}

netns_remove() {
  local ns p
  for ns in "$@"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
}

# Processes in the namespaces, except those named in $1 (a comm, e.g. sshd).
netns_leftovers() {
  local spare=${1:-} p
  for p in $(ip netns pids "$h0" 2>/dev/null) $(ip netns pids "$h1" 2>/dev/null); do
    [[ -n $spare && $(cat /proc/$p/comm 2>/dev/null) == "$spare" ]] || echo "$p:$(cat /proc/$p/comm 2>/dev/null)"
  done | xargs
}

# netns_sshd DIR: one sshd per namespace of netns_bridge on 10.78.NET.{1,2}:22 with a generated
# host key, and a client key; sets ssh_opts (the options that reach them as root).
netns_sshd() {
  local dir=$1 net=$2 i=1 ns sshd
  sshd=$(command -v sshd || echo /usr/sbin/sshd)
  [[ -x $sshd ]] && command -v ssh-keygen >/dev/null || skip "ssh tests need openssh-server"
  mkdir -p /run/sshd
  ssh-keygen -q -t ed25519 -N "" -f "$dir/host_key"
  ssh-keygen -q -t ed25519 -N "" -f "$dir/client_key"
  cp "$dir/client_key.pub" "$dir/authorized_keys"
  chmod 600 "$dir/authorized_keys"
  for ns in "$h0" "$h1"; do
    cat >"$dir/sshd_$i.conf" <<CONF
ListenAddress 10.78.$net.$i
Port 22
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile $dir/sshd_$i.pid
AcceptEnv none
CONF
    ip netns exec "$ns" "$sshd" -f "$dir/sshd_$i.conf" -E "$dir/sshd_$i.log"
    at_exit kill "\$(cat $dir/sshd_$i.pid)"
    i=$((i + 1))
  done
  sleep 0.5
  ssh_opts=(-i "$dir/client_key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
    -o LogLevel=ERROR -l root)
}

# slurm_cluster DIR: a private munged, slurmctld and two slurmd (n0, n1) on this machine, on
# their own ports and socket; exports SLURM_CONF. slurm_stop stops them (also at exit).
slurm_cluster() {
  local dir=$1 tool host base
  for tool in slurmctld slurmd srun salloc squeue munged; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || skip "$tool not installed (slurm-wlm, munge)"
  done
  need_root "starting slurmd"
  export PATH=$PATH:/usr/sbin
  base=$((17000 + (RANDOM % 200) * 10))
  export SLURM_CONF=$dir/slurm.conf
  slurm_dir=$dir
  at_exit slurm_stop
  mkdir -p "$dir/munge" "$dir/state" && chmod 700 "$dir/munge"
  head -c 1024 /dev/urandom >"$dir/munge/key" && chmod 400 "$dir/munge/key"
  munged --force --socket="$dir/munge/sock" --key-file="$dir/munge/key" --pid-file="$dir/munge/pid" \
    --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" || { echo "FAIL: munged did not start"; exit 1; }
  host=$(hostname)
  cat >"$SLURM_CONF" <<CONF
ClusterName=ddpb$$
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
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
  slurmctld && slurmd -N n0 && slurmd -N n1 || { echo "FAIL: Slurm daemons did not start"; tail "$dir"/*.log; exit 1; }
  for _ in $(seq 50); do [[ $(sinfo -h -o %t 2>/dev/null | sort -u) == idle ]] && break; sleep 0.2; done
  [[ $(sinfo -h -o %D 2>/dev/null) == 2 ]] || { echo "FAIL: 2 idle nodes expected: $(sinfo 2>&1)"; exit 1; }
}

slurm_pids() { cat "$slurm_dir"/*.pid "$slurm_dir"/munge/pid 2>/dev/null; }
slurm_stop() {
  local pid
  for pid in $(slurm_pids); do kill "$pid" 2>/dev/null; done
  sleep 1
  for pid in $(slurm_pids); do kill -9 "$pid" 2>/dev/null; done
}
