#!/usr/bin/env bash
# ddpbisect-worker over real Gloo, ranks launched with torchrun's environment contract:
# 1, 2 and 4 ranks train to the end with identical parameter checksums; every fault kind fires
# when all its conditions hold; for every condition type, the run passes when only it is unmet.
set -u
driver=$1 worker=$2
tmp=$(mktemp -d); trap 'pkill -P $$ 2>/dev/null; rm -rf "$tmp"' EXIT
fails=0 passed=0

# trial WORLD NODES FAULT_YAML [--set ...]: runs one trial; leaves rank logs in $tmp/{out,err}R.
trial() {
  local world=$1 nodes=$2 fault=$3; shift 3
  local ppn=$((world / nodes))
  cat >"$tmp/spec.yaml" <<EOS
workload:
  builtin:
    model: [embedding, linear, dropout, batchnorm, head]
    dataset: ${DATASET:-{kind: synthetic, samples: 64, seed: 1\}}
    features: [grad_clip, checkpoint, eval, sync_bn${EXTRA_FEATURES:-}]
    params: {steps: 6, batch_size: 8}
    collective_timeout: 2s
    faults: [$fault]
stages: [{name: s, nodes: $nodes, procs_per_node: $ppn}]
EOS
  rm -f "$tmp"/out* "$tmp"/err* "$tmp"/rc*
  "$driver" config "$tmp/spec.yaml" "$@" >"$tmp/cfg.json" || { echo "config failed"; return 1; }
  local attempt r
  # A port already in use is infrastructure, not the worker: retry on another one, as ddpbisect
  # does. Ports come from below the kernel's ephemeral range, which Gloo's connections use.
  for attempt in 1 2 3; do
    local port=$((20000 + RANDOM % 12000)) pids=()
    rm -f "$tmp"/out* "$tmp"/err* "$tmp"/rc*
    for ((r = 0; r < world; r++)); do
      RANK=$r WORLD_SIZE=$world LOCAL_RANK=$((r % ppn)) LOCAL_WORLD_SIZE=$ppn NODE_RANK=$((r / ppn)) \
        MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DDPBISECT_CONFIG="$tmp/cfg.json" DDPBISECT_TRIAL_DIR="$tmp" \
        timeout -s USR1 -k 1 ${HANG_AFTER:-20} "$worker" >"$tmp/out$r" 2>"$tmp/err$r" &
      pids+=($!)
    done
    for ((r = 0; r < world; r++)); do wait "${pids[$r]}"; echo $? >"$tmp/rc$r"; done
    grep -q "Address already in use" "$tmp"/err* || break
  done
}

ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; for f in "$tmp"/err*; do echo "--- $f"; head -c 1200 "$f"; done; fails=$((fails + 1)); }

# expect_pass NAME WORLD NODES FAULT [--set ...]
expect_pass() {
  local name=$1; shift
  trial "$@"
  local world=$1
  for ((r = 0; r < world; r++)); do
    [[ $(cat "$tmp/rc$r") == 0 ]] || { bad "$name: rank $r exited $(cat "$tmp/rc$r")"; return; }
  done
  local sums; sums=$(grep -h 'param checksum' "$tmp"/out* | sed 's/.*checksum //' | sort -u | wc -l)
  [[ $sums == 1 ]] || { bad "$name: ranks disagree on parameters"; return; }
  grep -q '^DDPBISECT_HEARTBEAT {"rank":0,"step":5,' "$tmp/out0" || { bad "$name: no heartbeat for the last step"; return; }
  ok
}

# expect_fail NAME RANK EXIT REGEX WORLD NODES FAULT [--set ...]: rank RANK exits EXIT with REGEX in stderr
expect_fail() {
  local name=$1 rank=$2 code=$3 regex=$4; shift 4
  trial "$@"
  local rc; rc=$(cat "$tmp/rc$rank")
  [[ $rc == "$code" ]] || { bad "$name: rank $rank exited $rc, want $code"; return; }
  [[ -z $regex ]] || grep -qE -- "$regex" "$tmp/err$rank" || { bad "$name: rank $rank stderr lacks /$regex/"; return; }
  ok
}

none='{kind: raise, requires: {ranks: [99]}}'
for world in 1 2 4; do expect_pass "train on $world ranks" $world 1 "$none"; done

# Every kind fires when its conditions hold.
expect_fail raise 1 1 '^RuntimeError: boom \(rank 1, step 2\)$' 2 1 '{kind: raise, message: boom, requires: {ranks: [1], step: 2}}'
expect_fail abort 1 134 'received signal 6' 2 1 '{kind: abort, requires: {ranks: [1]}}'
expect_fail segfault 0 139 'received signal 11' 2 1 '{kind: segfault, requires: {ranks: [0]}}'
expect_fail sigkill 1 137 '' 2 1 '{kind: sigkill, requires: {ranks: [1]}}'
expect_fail exit 1 7 '' 2 1 '{kind: exit, exit_code: 7, requires: {ranks: [1]}}'
HANG_AFTER=4 expect_fail hang-loader 1 137 'in deadlocked_loader' 2 1 '{kind: hang, requires: {ranks: [1], step: 1}}'
# The peer of a rank that stops calling collectives times out (collective_timeout is 2s).
HANG_AFTER=4 expect_fail hang-collectives 1 137 'in stop_calling_collectives' 2 1 '{kind: hang, mode: collectives, requires: {ranks: [1]}}'
HANG_AFTER=4 expect_fail hang-collectives-peer 0 1 'Timed out waiting 2000ms' 2 1 '{kind: hang, mode: collectives, requires: {ranks: [1]}}'
expect_fail collective_mismatch 0 134 'op.preamble.length <= op.nbytes' 2 1 '{kind: collective_mismatch, requires: {ranks: [0], step: 1}}'
expect_fail size_mismatch 0 134 'op.preamble.length <= op.nbytes' 2 1 '{kind: size_mismatch, requires: {ranks: [1]}}'
expect_fail nan 1 1 '^FloatingPointError: non-finite loss' 2 1 '{kind: nan, requires: {samples: [5]}}'
expect_fail unused_parameter 0 1 'Expected to have finished reduction in the prior iteration' 2 1 '{kind: unused_parameter, component: linear}'
expect_fail oom 0 1 "DefaultCPUAllocator: can't allocate memory" 2 1 '{kind: oom, requires: {ranks: [0]}}'
expect_fail straggler 0 1 'Timed out waiting 2000ms for (recv|send) operation' 2 1 '{kind: straggler, delay: 5s, requires: {ranks: [1], step: 1}}'
EXTRA_FEATURES=', param_checksum' expect_fail divergence 0 1 'parameters diverged across ranks' 2 1 '{kind: divergence, requires: {ranks: [1]}}' --set features=param_checksum
expect_fail missing_file 1 1 "^FileNotFoundError: .*'/nonexistent/shard.idx'" 2 2 '{kind: missing_file, path: /nonexistent/shard.idx, requires: {nodes: [1]}}'

# All conditions at once, then each one unmet alone (rank 1 is node 1; its shard has the odd samples).
all='{kind: raise, message: all, requires: {ranks: [1], min_world_size: 2, nodes: [1], step: 2, components: [dropout], features: [checkpoint], samples: [5], params: {batch_size: {min: 8}}}}'
expect_fail "all conditions hold" 1 1 '^RuntimeError: all' 2 2 "$all"
expect_pass "unmet: ranks" 2 2 "${all/ranks: \[1\]/ranks: [3]}"
expect_pass "unmet: min_world_size" 2 2 "${all/min_world_size: 2/min_world_size: 3}"
expect_pass "unmet: nodes" 2 1 "$all"
expect_pass "unmet: step" 2 2 "${all/step: 2/step: 6}"
expect_pass "unmet: components" 2 2 "$all" --set components=embedding,linear,batchnorm,head
expect_pass "unmet: features" 2 2 "$all" --set features=grad_clip,eval
expect_pass "unmet: samples" 2 2 "$all" --set samples=0-4,6-63
expect_pass "unmet: params" 2 2 "$all" --set batch_size=4
expect_pass "unmet: probability" 2 2 "${all/message: all,/message: all, probability: 0.0,}"

# A CSV data set whose first row names its columns trains (the header is not a sample); a word
# among a data row's numbers is still refused with its line.
{ echo "f0,f1,f2,label"; for ((i = 0; i < 64; i++)); do echo "$i.5,1,-2,$((i % 2))"; done; } >"$tmp/data.csv"
DATASET="{kind: csv, path: $tmp/data.csv}" expect_pass "csv with a header row" 2 1 ''
DATASET="{kind: csv, path: $tmp/data.csv}" expect_fail "csv header is not sample 0" 1 1 '^RuntimeError: first sample' 2 1 '{kind: raise, message: first sample, requires: {ranks: [1], samples: [63]}}'
cat >"$tmp/capped.yaml" <<EOS
workload: {builtin: {model: [linear, head], dataset: {kind: csv, path: $tmp/data.csv, samples: 65}}}
stages: [{name: s, nodes: 1, procs_per_node: 1}]
EOS
if "$driver" validate "$tmp/capped.yaml" >/dev/null 2>"$tmp/capped.err" ||
  ! grep -q 'capped.yaml:1:.*65 is more than the 64 data rows' "$tmp/capped.err"; then
  bad "csv samples cap over its rows: $(cat "$tmp/capped.err")"
else
  passed=$((passed + 1))
fi
sed -i '3s/.*/1,x,2,0/' "$tmp/data.csv"
DATASET="{kind: csv, path: $tmp/data.csv}" expect_fail "csv typo" 0 1 "data.csv:3: not a number: 'x'" 1 1 ''

echo "worker faults: $passed passed, $fails failed"
[[ $fails -eq 0 ]]
