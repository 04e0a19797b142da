#!/usr/bin/env bash
# The status line in a real terminal (tmux) at 80x24 and 200x50 and across a resize: it never
# wraps, there is only ever one (it updates in place), its clock moves during a trial, a failure
# message's ANSI codes show as text, and it is gone at the end. With TERM=dumb in the same
# terminal, and through a pipe, the output is plain lines: no carriage return, no escape code.
# Usage: status_line.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$(realpath "$1") root=$(realpath "$2")
command -v tmux >/dev/null || { echo "tmux is not installed (scripts/setup.sh installs it)"; exit 1; }
tmp=$(mktemp -d)
sock="ddpbisect-status-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -f "/tmp/tmux-$(id -u)/$sock"; rm -rf "$tmp"' EXIT

cat >"$tmp/spec.yaml" <<EOF
version: 1
name: slow-culprit
workload:
  command: [python3, $root/tests/e2e/programs/slow_culprit.py, "{samples}", "{components}"]
  preload: none  # slow_culprit.py imports no torch: a warm start would import it for nothing
  samples: 8
  components: [a, c]
stages:
  - {name: pair, nodes: 1, procs_per_node: 2}
EOF
export SLOW_CULPRIT_SLEEP=0.4

# run_in_tmux NAME COLS ROWS [RESIZE_COLS]: runs a reduction in a tmux pane of that size and
# captures the pane (wrapped lines joined, so a line that wrapped shows longer than the pane)
# every 0.2 s until it ends, into $tmp/NAME.caps/N; the pane's raw bytes go to $tmp/NAME.raw.
run_in_tmux() {
  local name=$1 cols=$2 rows=$3 resize=${4:-} term=${TERM_IN_PANE:-xterm-256color}
  mkdir -p "$tmp/$name.caps"
  tmux -L "$sock" -f /dev/null new-session -d -s "$name" -x "$cols" -y "$rows" \
    "cd '$tmp' && TERM=$term PATH='$PATH' '$bin' spec.yaml --out out-$name --confirm 1; echo EXIT=\$?; sleep 600"
  tmux -L "$sock" pipe-pane -o -t "$name" "cat >>'$tmp/$name.raw'"
  local i=0 resized=
  for _ in $(seq 900); do
    sleep 0.2
    i=$((i + 1))
    tmux -L "$sock" capture-pane -p -J -t "$name" >"$tmp/$name.caps/$i" 2>/dev/null || break
    grep -q '^EXIT=' "$tmp/$name.caps/$i" && break
    if [[ -n $resize && -z $resized ]] && grep -q '^\[.*trials' "$tmp/$name.caps/$i" && [[ $i -gt 10 ]]; then
      tmux -L "$sock" resize-window -t "$name" -x "$resize" -y "$rows"
      echo "$i" >"$tmp/$name.resized_at"
      resized=yes
    fi
  done
  tmux -L "$sock" capture-pane -p -J -S -1000 -t "$name" >"$tmp/$name.history"
  tmux -L "$sock" kill-session -t "$name"
}

# check_smart NAME COLS [RESIZE_COLS]
check_smart() {
  python3 - "$tmp" "$1" "$2" "${3:-0}" <<'PY'
import os, re, sys
tmp, name, cols, resize = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
status = re.compile(r"^\[\d+(/\d+)? trials?, ")
caps_dir = f"{tmp}/{name}.caps"
caps = sorted(os.listdir(caps_dir), key=int)
resized_at = int(open(f"{tmp}/{name}.resized_at").read()) if resize else None
seen, clock_by_trial, errors = [], {}, []
for c in caps:
    lines = open(f"{caps_dir}/{c}").read().split("\n")
    if any(l.startswith("EXIT=") for l in lines):
        continue
    rows = [l for l in lines if status.match(l)]
    if len(rows) > 1:
        errors.append(f"capture {c}: {len(rows)} status lines on screen (not in place): {rows}")
    width = resize if resized_at is not None and int(c) > resized_at + 1 else cols
    for r in rows:
        if len(r) >= width:
            errors.append(f"capture {c}: a {len(r)}-column status line in {width} columns: {r!r}")
        seen.append(r)
        m = re.search(r"\| trial (\d+): ([\d.]+) s", r)
        if m:
            clock_by_trial.setdefault(m.group(1), set()).add(m.group(2))
history = open(f"{tmp}/{name}.history").read()
final = [l for l in history.split("\n") if status.match(l)]
if final:
    errors.append(f"status lines left in the scrollback at the end: {final[:3]}")
if len(set(seen)) < 5:
    errors.append(f"the status line hardly changed: {sorted(set(seen))}")
if not any(len(v) >= 2 for v in clock_by_trial.values()):
    errors.append(f"the running trial's clock never moved: {clock_by_trial}")
if "\u241b[31m" not in history or "failure found on stage 'pair': rank 1: RuntimeError" not in history:
    errors.append("the failure line with its ANSI code shown as text is not on screen")
if "reduced to a minimal failing configuration" not in history:
    errors.append("no summary at the end")
for e in errors:
    print(f"{name}: {e}")
sys.exit(1 if errors else 0)
PY
}

run_in_tmux small 80 24
check_smart small 80 && ok || bad "80x24: the status line wrapped, repeated or did not update"
raw=$(cat "$tmp/small.raw")
[[ $raw == *$'\r\e[K'* && $raw != *$'\e[31m'* ]] && ok || bad "80x24: no in-place redraw, or the workload's colour code reached the terminal"

run_in_tmux large 200 50
check_smart large 200 && ok || bad "200x50: the status line wrapped, repeated or did not update"

run_in_tmux resize 120 30 60
check_smart resize 120 60 && ok || bad "resize from 120 to 60 columns: the status line did not follow (SIGWINCH)"

# TERM=dumb on the same terminal: plain lines only.
TERM_IN_PANE=dumb run_in_tmux dumb 80 24
raw=$(cat "$tmp/dumb.raw")
python3 - "$tmp/dumb.raw" <<'PY' && ok || bad "TERM=dumb: not plain lines"
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
# tmux's own pane output carries no escape codes of ours: ddpbisect wrote none.
assert "\x1b[K" not in raw, "an erase-line code under TERM=dumb"
lines = raw.replace("\r\n", "\n").split("\n")
assert "\r" not in "\n".join(lines), "a carriage return under TERM=dumb"
trials = [l for l in lines if re.match(r"^trial \d+: ", l)]
assert len(trials) >= 5, f"{len(trials)} trial lines"
assert any(l.startswith("== round 1: ") for l in lines), "no phase line"
assert not any(re.match(r"^\[\d+ trials?, ", l) for l in lines), "a status line under TERM=dumb"
PY

# A pipe: plain lines, one per trial.
(cd "$tmp" && "$bin" spec.yaml --out out-pipe --confirm 1 2>&1 | cat >"$tmp/pipe.log")
python3 - "$tmp/pipe.log" <<'PY' && ok || bad "pipe: not plain lines"
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
assert "\r" not in raw and "\x1b" not in raw, "a carriage return or an escape code in a pipe"
lines = raw.split("\n")
assert sum(bool(re.match(r"^trial \d+: \d+ ranks?, ", l)) for l in lines) >= 5, raw[:2000]
assert any("failed differently" in l or "failed (the target)" in l for l in lines), raw[:2000]
assert "\u241b[31m" in raw, "the failure's colour code is not shown as text"
PY

finish status_line
