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
cp "$root/tests/zoo/python/rank_exception.py" "$root/tests/zoo/python/zoo_common.py" "$tmp/elsewhere/"
sed -e "s|PYTHONPATH: ../../../python|PYTHONPATH: $prefix/share/ddpbisect/python|" \
  "$root/tests/zoo/python/rank_exception.yaml" >"$tmp/elsewhere/rank_exception.yaml"
want=$(grep -m1 "^# expect:" rank_exception.yaml)
ddpbisect rank_exception.yaml --out out --quiet >/dev/null 2>err.txt ||
  { bad "the installed ddpbisect's reduction exited $?: $(tail -3 err.txt)"; }
py '
import json, sys
r = json.load(open("out/report.json"))
want = dict(kv.split("=", 1) for kv in sys.argv[1].split(":", 1)[1].split())
m = r["minimal"]
assert str(m["nodes"]) == want["nodes"] and str(m["procs_per_node"]) == want["procs_per_node"], (m, want)
assert r["signature"]["exception"] == want.get("exception", r["signature"]["exception"]), r["signature"]
' "$want" && ok || bad "the installed reduction did not reach the zoo's minimum"

# The demo's built-in workload: one trial of its first stage through the installed worker.
if [[ -x $prefix/libexec/ddpbisect/ddpbisect-worker ]]; then
  ddpbisect run "$prefix/share/ddpbisect/configs/demo.yaml" --out demo --json >demo.json 2>demo.err
  rc=$?
  [[ $rc == 0 || $rc == 1 ]] && py 'import json; json.load(open("demo.json"))' && ok ||
    bad "the installed worker did not run the demo (exit $rc): $(tail -3 demo.err)"
fi
finish install/prefix
