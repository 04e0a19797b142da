#!/usr/bin/env bash
# Runs `ddpbisect validate` on every malformed spec under specs/bad (each must exit 2 and report
# every `# expect: LINE:COL text` it declares) and on every good spec (must exit 0, and its
# normalized form must validate again).
set -u
bin=$1 specs=$2 configs=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0 count=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for f in "$specs"/bad/*.yaml; do
  count=$((count + 1))
  "$bin" validate "$f" >"$tmp/out" 2>"$tmp/err"; rc=$?
  [[ $rc -eq 2 ]] || { fail "$f: exit $rc, want 2"; cat "$tmp/err"; continue; }
  n=0
  while IFS= read -r line; do
    loc=${line%% *} text=${line#* }
    n=$((n + 1))
    grep -F -- "$f:$loc:" "$tmp/err" | grep -qF -- "$text" ||
      { fail "$f: no error at $loc containing '$text'; got:"; sed 's/^/    /' "$tmp/err"; }
  done < <(sed -n 's/^# expect: //p' "$f")
  [[ $n -gt 0 ]] || fail "$f declares no '# expect:' line"
done

for f in "$specs"/good/*.yaml "$configs"/*.yaml "$configs"/examples/*.yaml; do
  [[ -e $f ]] || continue
  count=$((count + 1))
  "$bin" validate "$f" >"$tmp/norm.yaml" 2>"$tmp/err" || { fail "$f: valid spec rejected:"; cat "$tmp/err"; continue; }
  # The normalized form is itself a valid spec (it anchors relative paths at its own folder).
  cp "$tmp/norm.yaml" "$(dirname "$f")/.normalized-$$.yaml"
  "$bin" validate "$(dirname "$f")/.normalized-$$.yaml" >/dev/null 2>"$tmp/err2" ||
    { fail "$f: normalized form does not validate:"; cat "$tmp/err2"; }
  rm -f "$(dirname "$f")/.normalized-$$.yaml"
done

echo "validate corpus: $((count - fails)) passed, $fails failed"
[[ $fails -eq 0 ]]
