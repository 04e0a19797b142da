#!/usr/bin/env bash
# Issue 30: `pip wheel` of the checkout (pyproject.toml), installed into a fresh venv that holds
# torch 2.13: `ddpbisect` is on the venv's PATH with its helpers and agent found in the venv,
# `import ddpbisect` works, a Python zoo case reduces to its minimum from another folder with only
# the venv's bin before the system's, `explain` runs where yaml-cpp and RE2 are hidden (a mount
# namespace; the build tree's binary, linked against them, does not start there), and
# `pip uninstall` leaves the venv as it was.
# Usage: install_wheel.sh REPO_ROOT BUILD_DIR PYTHON
set -u
source "$(dirname "$0")/lib.sh"
root=$(realpath "$1")
build=$(realpath "$2")
python=$3
tmp=$(mktemp -d)
[[ -n ${KEEP:-} ]] || at_exit rm -rf "$tmp"
"$python" -m pip --version >/dev/null 2>&1 || skip "$python has no pip"

t0=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$python" -m pip wheel "$root" -w "$tmp/wheels" --no-deps >"$tmp/wheel.log" 2>&1 ||
  { bad "pip wheel failed: $(grep -v '^WARNING: Location' "$tmp/wheel.log" | tail -5)"; finish install/wheel; exit 1; }
whl=$(ls "$tmp"/wheels/ddpbisect-*.whl)
echo "wheel: $(basename "$whl"), $(stat -c %s "$whl") bytes, built in $((SECONDS - t0)) s"

venv=$tmp/venv
"$python" -m venv "$venv" && "$venv/bin/pip" install -q torch==2.13.0 >"$tmp/torch.log" 2>&1 ||
  { bad "a venv with torch 2.13: $(tail -3 "$tmp/torch.log")"; finish install/wheel; exit 1; }
find "$venv" -path '*/__pycache__' -prune -o ! -type d -print | sort >"$tmp/before.txt"
t0=$SECONDS
"$venv/bin/pip" install -q "$whl" >"$tmp/install.log" 2>&1 ||
  { bad "pip install of the wheel failed: $(tail -3 "$tmp/install.log")"; finish install/wheel; exit 1; }
echo "installed in $((SECONDS - t0)) s"

mkdir -p "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
export PATH=$venv/bin:/usr/local/bin:/usr/bin:/bin
[[ $(command -v ddpbisect) == "$venv/bin/ddpbisect" ]] && ok ||
  bad "ddpbisect is not on the venv's PATH: $(command -v ddpbisect)"
v=$(ddpbisect --version)
grep -q "^isolate: $venv/libexec/ddpbisect/ddpbisect-isolate$" <<<"$v" &&
  grep -q "^warm:    $venv/libexec/ddpbisect/ddpbisect-warm$" <<<"$v" &&
  grep -q "^agent:   $venv/share/ddpbisect/python/agent$" <<<"$v" && ok ||
  bad "the wheel's ddpbisect does not use the venv's helpers: $v"
python -c 'import ddpbisect, sys; assert ddpbisect.__file__.startswith(sys.prefix), ddpbisect.__file__' &&
  ok || bad "import ddpbisect does not find the venv's helper module"

# A Python zoo case, copied out of the checkout; the helper module comes from the venv, so the
# spec's PYTHONPATH into the checkout goes.
zoo_case_reduces_here "$root" "" "the wheel's ddpbisect"

# explain where the libraries the build tree links are hidden: the wheel carries them.
log=$root/tests/diagnose/fixtures/01-python-nameerror/input
hide='for f in /usr/lib/x86_64-linux-gnu/libyaml-cpp.so* /usr/lib/x86_64-linux-gnu/libre2.so*; do
  [ -f "$f" ] && mount --bind /dev/null "$f"; done; exec "$@"'
if [[ $(id -u) == 0 ]] && unshare --mount --propagation private true 2>/dev/null; then
  if ldd "$build/ddpbisect" | grep -q "libyaml-cpp\|libre2"; then
    unshare --mount --propagation private sh -c "$hide" sh "$build/ddpbisect" --version \
      >/dev/null 2>&1 && bad "the hiding namespace did not hide yaml-cpp and RE2" || ok
  fi
  unshare --mount --propagation private sh -c "$hide" sh ddpbisect explain "$log" >explain.txt 2>&1 &&
    grep -q "NameError" explain.txt && ok ||
    bad "the wheel's explain without yaml-cpp and RE2: $(tail -3 explain.txt)"
else
  echo "note: no mount namespace here; checking the wheel's links instead"
  ! ldd "$venv/bin/ddpbisect" | grep -q "libyaml-cpp\|libre2" && ddpbisect explain "$log" | grep -q NameError &&
    ok || bad "the wheel's ddpbisect links yaml-cpp or RE2, or explain failed"
fi

"$venv/bin/pip" uninstall -y -q ddpbisect >"$tmp/uninstall.log" 2>&1 || bad "pip uninstall failed"
# pip removes every file the wheel installed, and no folder outside site-packages it made: empty
# folders (libexec/, share/ddpbisect/) may stay, as with any wheel that carries data.
find "$venv" -path '*/__pycache__' -prune -o ! -type d -print | sort >"$tmp/after.txt"
left=$(comm -13 "$tmp/before.txt" "$tmp/after.txt")
[[ -z $left ]] && ok || bad "pip uninstall left: $(head -5 <<<"$left" | xargs)"
empty=$(find "$venv/libexec" "$venv/share/ddpbisect" "$venv/share/doc" -type d 2>/dev/null | xargs)
[[ -z $empty ]] || echo "note: empty folders after pip uninstall: $empty"
left=$(find "$venv" -path '*/__pycache__/*' \( -name 'ddpbisect*' -o -path '*share/ddpbisect*' \))
[[ -z $left ]] && ok || bad "pip uninstall left compiled files: $(head -3 <<<"$left" | xargs)"
finish install/wheel
