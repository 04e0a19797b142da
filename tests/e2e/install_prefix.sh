#!/usr/bin/env bash
# Issue 30: `cmake --install` to a temporary prefix, then the installed ddpbisect, with only
# P/bin on PATH before the system's and from another folder, finds its helpers and agent in the
# prefix (not the build tree), reduces a Python command job to the zoo's minimum and runs the
# demo's built-in worker.
# Usage: install_prefix.sh BUILD_DIR REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
build=$(realpath "$1")
root=$(realpath "$2")
tmp=$(mktemp -d)
[[ -n ${KEEP:-} ]] || at_exit rm -rf "$tmp"
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
  { bad "cmake --install failed: $(tail -3 "$tmp/install.log")"; finish install/prefix; exit 1; }
[[ -x $prefix/bin/ddpbisect && -x $prefix/libexec/ddpbisect/ddpbisect-isolate &&
   -x $prefix/libexec/ddpbisect/ddpbisect-warm &&
   -f $prefix/share/ddpbisect/python/agent/sitecustomize.py &&
   -f $prefix/share/ddpbisect/python/ddpbisect.py && -f $prefix/share/ddpbisect/configs/demo.yaml ]] &&
  ok || bad "the prefix lacks a file: $(cd "$prefix" && find . -maxdepth 3 | sort | xargs)"

mkdir -p "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
export PATH=$prefix/bin:$PATH
v=$(ddpbisect --version)
grep -q "^isolate: $prefix/libexec/ddpbisect/ddpbisect-isolate$" <<<"$v" &&
  grep -q "^warm:    $prefix/libexec/ddpbisect/ddpbisect-warm$" <<<"$v" &&
  grep -q "^agent:   $prefix/share/ddpbisect/python/agent$" <<<"$v" && ok ||
  bad "the installed ddpbisect does not use the prefix's helpers: $v"

# A Python command job, from a copy of a zoo case outside the checkout.
zoo_case_reduces_here "$root" "$prefix/share/ddpbisect/python" "the installed ddpbisect"

# The demo's built-in workload: one trial of its first stage through the installed worker.
if [[ -x $prefix/libexec/ddpbisect/ddpbisect-worker ]]; then
  ddpbisect run "$prefix/share/ddpbisect/configs/demo.yaml" --out demo --json >demo.json 2>demo.err
  rc=$?
  [[ $rc == 0 || $rc == 1 ]] && py 'import json; json.load(open("demo.json"))' && ok ||
    bad "the installed worker did not run the demo (exit $rc): $(tail -3 demo.err)"
fi
finish install/prefix
