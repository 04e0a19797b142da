#!/usr/bin/env bash
# The layer check (cmake/check_layers.cmake) on a copy of src/: the real tree passes; an upward
# include, an include across to a sibling stage, an include of a narrowed layer's other headers,
# and a worker include of the reducer are each rejected, naming file:line.
# Usage: layer_check.sh CMAKE TABLE SRC
set -u
cmake=$1 table=$2 src=$3
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { "$cmake" -DSRC="$tmp/src" -DTABLE="$table" -P "$(dirname "$0")/../../cmake/check_layers.cmake" 2>&1; }
fresh() { rm -rf "$tmp/src"; cp -r "$src" "$tmp/src"; }

fresh
if out=$(check); then ok; else bad "the real tree is rejected: $out"; fi

# plant FILE HEADER EXPECTED: append the include to FILE and expect a rejection naming it.
plant() {
  local file=$1 header=$2 want=$3
  fresh
  printf '#include "%s"\n' "$header" >>"$tmp/src/$file"
  local line
  line=$(wc -l <"$tmp/src/$file")
  if out=$(check); then
    bad "$file including $header was accepted"
  elif ! grep -qF "src/$file:$line: error: $want" <<<"$out"; then
    bad "$file including $header: expected 'src/$file:$line: error: $want', got: $out"
  else
    ok
  fi
}
plant diagnose/classify.cpp observe/trial_runner.hpp 'diagnose/ may not include "observe/trial_runner.hpp"'
plant spec/loader.cpp launch/launcher.hpp 'spec/ may not include "launch/launcher.hpp"'
plant reduce/oracle.cpp report/report.hpp 'reduce/ may not include "report/report.hpp"'
plant probe/doctor.cpp reduce/oracle.hpp 'probe/ may not include "reduce/oracle.hpp"'
plant report/junit.cpp reduce/oracle.hpp 'report/ may not include "reduce/oracle.hpp"'
plant report/junit.cpp reduce/progress.hpp 'report/ may not include "reduce/progress.hpp"'
plant worker/trainer.cpp reduce/oracle.hpp 'worker/ may not include "reduce/oracle.hpp"'
plant common/text.hpp spec/spec.hpp 'common/ may not include "spec/spec.hpp"'

# What a layer may use is still accepted: report reads the result, the CLI everything.
fresh
printf '#include "reduce/result.hpp"\n' >>"$tmp/src/report/junit.cpp"
printf '#include "reduce/oracle.hpp"\n' >>"$tmp/src/cli/reduce.cpp"
if out=$(check); then ok; else bad "allowed includes rejected: $out"; fi

finish layer_check
