#!/usr/bin/env bash
# Runs one fuzz target for a given time:  scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]
# (`scripts/fuzz.sh list` names the targets). Builds the `fuzz` preset (clang, libFuzzer, ASan +
# UBSan) and the seed corpora from the fixtures (fuzz/seeds.py), then fuzzes at nice 19. New
# inputs collect in build/libfuzzer/corpus/TARGET; a crash, leak, timeout (10 s) or failed property
# is written to build/libfuzzer/artifacts/TARGET/ and the run stops: fix it, then copy the input to
# tests/fuzz/regressions/TARGET/ so that `ctest -L fuzz` replays it from then on.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
targets=$(cd fuzz/targets && ls *.cpp | sed 's/\.cpp$//')
if [[ $# -lt 1 || $1 == list ]]; then
  echo "$targets"
  exit 0
fi
[[ $# -ge 2 ]] || { echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer flags...]" >&2; exit 2; }
target=$1 seconds=$2
shift 2
grep -qx -- "$target" <<<"$targets" || {
  echo "scripts/fuzz.sh: no target '$target'; targets: $(echo $targets)" >&2
  exit 2
}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "scripts/fuzz.sh: SECONDS must be a whole number, got '$seconds'" >&2; exit 2; }

# Runs may start at once (`scripts/fuzz.sh A 600 & scripts/fuzz.sh B 600 &`): one builds while
# the others wait on the lock (two ninjas in one build folder corrupt it), and each run has seeds
# of its own (seeds.py empties the folder it writes), removed when it ends.
mkdir -p build/libfuzzer
{
  flock 9
  cmake --preset fuzz >/dev/null
  nice -n 19 cmake --build --preset fuzz -j2
} 9>build/libfuzzer/.build.lock
seeds=$(mktemp -d "build/libfuzzer/seeds.$target.XXXXXX")
trap 'rm -rf "$seeds"' EXIT
python3 fuzz/seeds.py "$root" "$seeds" >/dev/null
corpus=build/libfuzzer/corpus/$target artifacts=build/libfuzzer/artifacts/$target
mkdir -p "$corpus" "$artifacts"
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$artifacts/")
dict=fuzz/dicts/$target.dict
[[ -f $dict ]] && args+=(-dict="$dict")
dirs=("$corpus")
[[ -d $seeds/$target ]] && dirs+=("$seeds/$target")
[[ -d tests/fuzz/regressions/$target ]] && dirs+=("tests/fuzz/regressions/$target")
# Not exec: the trap removes the seeds once the fuzzer ends (Ctrl-C reaches both).
nice -n 19 "build/libfuzzer/fuzz/fuzz_$target" "${args[@]}" "$@" "${dirs[@]}"
