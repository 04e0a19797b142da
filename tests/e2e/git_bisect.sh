#!/usr/bin/env bash
# `git bisect run ddpbisect check REPRO.yaml --bisect` on a repository whose history has a commit
# that introduces the bug and, around it, commits where the repro spec's YAML is broken. Bisect
# must stop there (exit 128: abort) instead of naming a commit; with the spec fixed (a good copy
# outside the tree), it must name the commit that introduced the bug.
# Usage: git_bisect.sh DDPBISECT
set -u
source "$(dirname "$0")/lib.sh"
bin=$(realpath "$1")
command -v git >/dev/null || { echo "git is not installed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$tmp/repo
mkdir -p "$repo" && cd "$repo" || exit 1
git init -q && git config user.email t@example.com && git config user.name test
git config commit.gpgsign false

write_spec() {  # write_spec FILE CWD: the repro spec, ValueError pinned
  cat >"$1" <<YAML
version: 1
name: bisect-demo
workload:
  command: [python3, train.py]
  cwd: $2
stages:
  - {name: one, nodes: 1, procs_per_node: 1}
match:
  signature: {category: python_exception, exception: ValueError}
YAML
}
commit() { git add -A && git commit -q -m "$1" && git rev-parse HEAD; }

printf 'print("training")\n' >train.py
write_spec repro.yaml .
good=$(commit "c1: a working trainer")
printf '# tuned\n' >>train.py
commit "c2: a harmless change" >/dev/null
printf 'stages: [\n' >>repro.yaml  # the spec's YAML broken from here ...
commit "c3: breaks the repro spec's YAML" >/dev/null
printf 'def step(batch):\n    if batch is None:\n        raise ValueError("batch is None")\nstep(None)\n' >>train.py
culprit=$(commit "c4: introduces the bug")
printf '# more tuning\n' >>train.py
commit "c5: another change" >/dev/null
write_spec repro.yaml .  # ... to here
commit "c6: fixes the repro spec" >/dev/null
printf '# last\n' >>train.py
commit "c7: HEAD" >/dev/null

# 1. The spec in the tree: bisect aborts on a commit whose spec does not parse.
git bisect start HEAD "$good" >/dev/null 2>&1
git bisect run "$bin" check repro.yaml --bisect --out "$tmp/check1" >"$tmp/run1.log" 2>&1
rc=$?
git bisect log >"$tmp/bisect1.log" 2>&1
git bisect reset -q >/dev/null 2>&1
if [[ $rc != 0 ]] && grep -qE 'exit code 128' "$tmp/run1.log" && ! grep -q 'is the first bad commit' "$tmp/run1.log" &&
  grep -q 'bad input aborts the bisection' "$tmp/run1.log"; then
  ok
else
  bad "a broken spec did not abort the bisection (git bisect run exited $rc)"
  tail -20 "$tmp/run1.log" >&2
fi

# 2. The spec fixed (a good copy outside the tree, running the tree's train.py): the culprit.
write_spec "$tmp/repro.yaml" "$repo"
git bisect start HEAD "$good" >/dev/null 2>&1
git bisect run "$bin" check "$tmp/repro.yaml" --bisect --out "$tmp/check2" >"$tmp/run2.log" 2>&1
rc=$?
git bisect reset -q >/dev/null 2>&1
if [[ $rc == 0 ]] && grep -q "^$culprit is the first bad commit" "$tmp/run2.log"; then
  ok
else
  bad "bisect did not name the commit that introduced the bug ($culprit; exit $rc)"
  tail -20 "$tmp/run2.log" >&2
fi
finish git_bisect
