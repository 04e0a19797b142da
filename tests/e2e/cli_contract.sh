#!/usr/bin/env bash
# The command-line contract without running a trial: version, help (each subcommand's own exit
# codes), routing (`ddpbisect [FLAGS] SPEC` is reduce), did-you-mean for subcommands, flags,
# keys, values and --set/--stage, the `ddpbisect:` prefix, --json errors, exit codes.
set -u
bin=$1 configs=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {  # expect RC DESCRIPTION -- CMD...  (stderr+stdout must match $pattern when set)
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>&1; local rc=$?
  if [[ $rc -ne $want ]]; then echo "FAIL: $what: exit $rc, want $want"; cat "$tmp/out"; fails=$((fails + 1)); return; fi
  if [[ -n ${pattern:-} ]] && ! grep -qE -- "$pattern" "$tmp/out"; then
    echo "FAIL: $what: output lacks /$pattern/"; cat "$tmp/out"; fails=$((fails + 1))
  fi
}
# Every line a CLI error prints on stderr starts with "ddpbisect" (or is a file:line:col error).
prefixed() {  # prefixed DESCRIPTION -- CMD...
  local what=$1; shift 2
  "$@" >/dev/null 2>"$tmp/err"
  if grep -vqE '^(ddpbisect( [a-z]+)?: |[^ ]+:[0-9]+(:[0-9]+)?: error: |[^ ]+: error: )' "$tmp/err"; then
    echo "FAIL: $what: a message without the ddpbisect: prefix"; cat "$tmp/err"; fails=$((fails + 1))
  fi
}
demo=$configs/demo.yaml
pattern='^ddpbisect [0-9]+\.[0-9]+\.[0-9]+' expect 0 "--version" -- "$bin" --version
pattern='validate' expect 0 "--help lists subcommands" -- "$bin" --help
pattern='Exit codes' expect 0 "help SUBCOMMAND is SUBCOMMAND --help" -- "$bin" help check

# Each --help lists its own exit codes and no other subcommand's.
pattern='^  3 +no failure found' expect 0 "explain --help: its own exit codes" -- "$bin" explain --help
grep -q 'did not reproduce' "$tmp/out" && { echo "FAIL: explain --help repeats reduce's codes"; fails=$((fails + 1)); }
pattern='^  4 +the budget ran out' expect 0 "reduce --help: budget exhausted is its own code" -- "$bin" reduce --help
pattern='^  128 +bad input' expect 0 "check --help: --bisect codes" -- "$bin" check --help
pattern='--out DIR' expect 0 "--out takes a DIR" -- "$bin" run --help
for sub in reduce run explain check doctor validate config; do
  pattern='^  70 +internal error' expect 0 "$sub --help: the internal-error code" -- "$bin" $sub --help
done

# Routing: a spec path means reduce, also when flags come first.
pattern='^ddpbisect: give a spec' expect 2 "no arguments" -- "$bin"
pattern='nope\.yaml.*cannot read' expect 2 "flags before the spec: reduce" -- "$bin" --out "$tmp/o" "$tmp/nope.yaml"
pattern='already holds files' expect 2 "flags before the spec reach reduce" -- "$bin" --out "$configs" "$demo"
pattern='^ddpbisect: '"'"'vaildate'"'"' is not a subcommand; did you mean '"'"'validate'"'"'\?' \
  expect 2 "did-you-mean for a subcommand" -- "$bin" vaildate "$demo"
pattern='did you mean '"'"'validate'"'"'' expect 2 "help with a mistyped subcommand" -- "$bin" help vaildate
pattern='"procs_per_node": 2' expect 0 "flags before the subcommand" -- "$bin" --json validate "$demo"

# Unknown flags: named, with a suggestion, before any missing-argument error.
pattern='^ddpbisect: unknown flag .--frobnicate.' expect 2 "unknown flag alone" -- "$bin" --frobnicate
pattern='^ddpbisect validate: unknown flag .--frobnicate.' expect 2 "unknown flag" -- "$bin" validate --frobnicate "$demo"
pattern="did you mean '--json'" expect 2 "did-you-mean for a flag" -- "$bin" validate --jsn "$demo"
pattern="did you mean '--resume'" expect 2 "did-you-mean for reduce's flag" -- "$bin" "$demo" --resum
pattern="'--stage': it is a flag of reduce, run, check, doctor, config" expect 2 "a flag of another subcommand" -- "$bin" explain --stage x y
pattern='^ddpbisect validate: a spec file is required' expect 2 "missing spec" -- "$bin" validate
pattern='^ddpbisect reduce: --jobs: ' expect 2 "CLI11's messages get the prefix" -- "$bin" reduce "$demo" --jobs 0
prefixed "CLI11 range error" -- "$bin" reduce "$demo" --jobs 0
prefixed "unknown flag" -- "$bin" run --bogus "$demo"

# Paths and specs.
pattern='nope\.yaml' expect 2 "missing spec names the file" -- "$bin" validate "$tmp/nope.yaml"
pattern='is a directory' expect 2 "a directory as spec" -- "$bin" validate "$tmp"
printf '' >"$tmp/empty.yaml"
pattern='empty\.yaml:1:1: error: the spec is empty' expect 2 "empty spec" -- "$bin" validate "$tmp/empty.yaml"
prefixed "spec errors" -- "$bin" validate "$tmp/empty.yaml"
pattern='"stages"' expect 0 "validate --json" -- "$bin" validate --json "$demo"
pattern='procs_per_node: 2' expect 0 "validate prints normalized YAML" -- "$bin" validate "$demo"

# Suggestions in the spec: keys, enum values (by typo and by meaning).
cat >"$tmp/typos.yaml" <<'YAML'
version: 1
workload:
  builtin:
    modle: [linear, head]
    dataset: {kind: synthetic, samples: 64}
    faults:
      - kind: rasie
stages:
  - {name: a, nodes: 1, procs_per_node: 1, device: gpu}
launcher: {kind: srun}
YAML
pattern="typos.yaml:4:5: error: workload.builtin.modle: unknown key; did you mean 'model'" expect 2 "key typo" -- "$bin" validate "$tmp/typos.yaml"
pattern="found 'rasie'; did you mean 'raise'" expect 2 "enum typo (a swap)" -- "$bin" validate "$tmp/typos.yaml"
pattern="found 'gpu'; did you mean 'cuda'" expect 2 "a value by meaning" -- "$bin" validate "$tmp/typos.yaml"
pattern="found 'srun'; did you mean 'slurm'" expect 2 "a launcher by meaning" -- "$bin" validate "$tmp/typos.yaml"

# --json errors are JSON on stdout.
"$bin" validate --json "$tmp/typos.yaml" >"$tmp/json" 2>"$tmp/json.err"; rc=$?
python3 - "$tmp/json" "$rc" <<'PY' || { echo "FAIL: validate --json errors are not JSON"; cat "$tmp/json"; fails=$((fails + 1)); }
import json, sys
j = json.load(open(sys.argv[1]))
assert sys.argv[2] == "2" and j["exit_code"] == 2 and j["error"] == "bad_input", j
e = [x for x in j["errors"] if x.get("path") == "workload.builtin.modle"][0]
assert e["line"] == 4 and e["column"] == 5 and "did you mean 'model'" in e["message"], e
PY
[[ -s $tmp/json.err ]] && { echo "FAIL: validate --json printed text on stderr"; cat "$tmp/json.err"; fails=$((fails + 1)); }
"$bin" run --json --bogus "$demo" >"$tmp/json" 2>/dev/null
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert "--bogus" in j["errors"][0]["message"], j' "$tmp/json" ||
  { echo "FAIL: run --json: a flag error is not JSON"; cat "$tmp/json"; fails=$((fails + 1)); }
"$bin" explain --json "$tmp/missing-logs" >"$tmp/json" 2>/dev/null
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["exit_code"] == 2, j' "$tmp/json" ||
  { echo "FAIL: explain --json: a missing path is not JSON"; cat "$tmp/json"; fails=$((fails + 1)); }

# --stage and --set: the valid names, and a suggestion.
pattern='--stage' expect 2 "doctor names an unknown stage" -- "$bin" doctor "$demo" --stage nowhere
pattern="no stage named 'nod'.*did you mean 'node'.*stages: single, node, multinode" expect 2 "--stage: list and suggestion" -- "$bin" run "$demo" --stage nod
pattern="unknown key 'stpes'; did you mean 'steps'.*params: batch_size, steps" expect 2 "--set: list and suggestion" -- "$bin" run "$demo" --set stpes=3
pattern="'dropuot' is not one of the spec's components; did you mean 'dropout'" expect 2 "--set components: suggestion" -- "$bin" config "$demo" --set components=dropuot
pattern='"steps": 3' expect 0 "--set a param" -- "$bin" config "$demo" --set steps=3
pattern='--expect' expect 2 "check --expect validates its value" -- "$bin" check "$demo" --expect maybe
pattern='no such file' expect 2 "explain on a missing path" -- "$bin" explain "$tmp/missing-logs"
pattern='--max-time' expect 2 "reduce --max-time must be a duration" -- "$bin" "$demo" --max-time soon --out "$tmp/o"
pattern="did you mean 'ddmin'" expect 2 "reduce --strategy suggestion" -- "$bin" "$demo" --strategy ddmn --out "$tmp/o"
# Under --bisect, bad input aborts git bisect run (128) instead of naming a commit.
pattern='aborts the bisection' expect 128 "check --bisect: missing spec" -- "$bin" check --bisect "$tmp/nope.yaml"
pattern='unknown flag' expect 128 "check --bisect: unknown flag" -- "$bin" check --bisect --bogus "$demo"
pattern='did you mean' expect 128 "check --bisect: bad spec" -- "$bin" check --bisect "$tmp/typos.yaml"
echo "cli contract: $fails failed"
[[ $fails -eq 0 ]]
