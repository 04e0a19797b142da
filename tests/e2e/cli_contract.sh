#!/usr/bin/env bash
# The command-line contract: version, help, exit codes for bad flags, bad paths and missing files.
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
pattern='^ddpbisect [0-9]+\.[0-9]+\.[0-9]+' expect 0 "--version" -- "$bin" --version
pattern='validate' expect 0 "--help lists subcommands" -- "$bin" --help
pattern='' expect 2 "no arguments" -- "$bin"
pattern='--frobnicate' expect 2 "unknown flag" -- "$bin" validate --frobnicate "$configs/demo.yaml"
pattern='nope\.yaml' expect 2 "missing spec names the file" -- "$bin" validate "$tmp/nope.yaml"
pattern='is a directory' expect 2 "a directory as spec" -- "$bin" validate "$tmp"
printf '' >"$tmp/empty.yaml"
pattern='empty\.yaml:1:1: error: the spec is empty' expect 2 "empty spec" -- "$bin" validate "$tmp/empty.yaml"
pattern='"stages"' expect 0 "validate --json" -- "$bin" validate --json "$configs/demo.yaml"
pattern='procs_per_node: 2' expect 0 "validate prints normalized YAML" -- "$bin" validate "$configs/demo.yaml"
pattern='--stage' expect 2 "doctor names an unknown stage" -- "$bin" doctor "$configs/demo.yaml" --stage nowhere
pattern='--expect' expect 2 "check --expect validates its value" -- "$bin" check "$configs/demo.yaml" --expect maybe
pattern='no such file' expect 2 "explain on a missing path" -- "$bin" explain "$tmp/missing-logs"
pattern='no stage named' expect 2 "run --stage must exist" -- "$bin" run "$configs/demo.yaml" --stage nope
pattern='--set' expect 2 "run --set must name a dimension" -- "$bin" run "$configs/demo.yaml" --set bogus=1
pattern='--max-time' expect 2 "reduce --max-time must be a duration" -- "$bin" "$configs/demo.yaml" --max-time soon --out "$tmp/o"
echo "cli contract: $fails failed"
[[ $fails -eq 0 ]]
