#!/usr/bin/env bash
# Issue #7 end to end: reduce a zoo spec with secrets in the environment, then check what a user
# takes away: report.json's documented fields, run.sh and repro.py reproducing the same failure
# without ddpbisect, report.html rendered by headless Chromium (screenshot + DOM), no secret in
# any output file.
# Usage: report_repro.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$(realpath "$1")
root=$2
worker=$(dirname "$bin")/ddpbisect-worker
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Secrets the report must never show: by variable name, and inside a URL.
export TORCH_CREDENTIAL_PROBE=sekrit-by-name-1 NCCL_IB_KEY=sekrit-by-name-2 HF_TOKEN=sekrit-3
export TORCH_HOME="https://alice:sekrit-in-url-4@store.example/cache" NCCL_DEBUG=WARN
out=$tmp/out
"$bin" "$root/tests/zoo/worker/rank_raise.yaml" --out "$out" --quiet >"$tmp/summary" 2>"$tmp/err" ||
  { bad "reduction exited $?"; cat "$tmp/err" >&2; }
grep -q "next: ddpbisect check" "$tmp/summary" && grep -q "report.html" "$tmp/summary" && ok ||
  bad "the terminal summary lacks the report paths or the next command"

# The summary and report.md lead with "rank N: Exception: message (file:line)".
head -2 "$tmp/summary" | grep -qE '^  failure: +rank 1: RuntimeError: rank one broke .*\(faults\.cpp:[0-9]+\)$' && ok ||
  { bad "the summary does not lead with the root cause's headline"; head -3 "$tmp/summary" >&2; }
head -1 "$out/report.md" | grep -qE '^# rank 1: RuntimeError: rank one broke .*\(faults\.cpp:[0-9]+\)$' && ok ||
  { bad "report.md does not lead with the headline"; head -3 "$out/report.md" >&2; }
python3 "$root/tests/e2e/md_check.py" "$out/report.md" && ok || bad "report.md: markdown structure"

# report.md pasted into a fresh folder with repro/: its Reproduce commands work as written.
fresh=$tmp/fresh
mkdir -p "$fresh" && cp -r "$out/report.md" "$out/repro" "$fresh/"
py '
import re, sys
md = open(sys.argv[1]).read()
block = re.search(r"## Reproduce\n.*?```sh\n(.*?)```", md, re.S).group(1)
for line in block.splitlines():
    print(line.split("  #")[0].strip())
' "$fresh/report.md" >"$tmp/commands"
[[ $(head -1 "$tmp/commands") == "cd repro" ]] && ! grep -q "$out" "$tmp/commands" && ok ||
  { bad "the repro commands are not relative to the report's folder"; cat "$tmp/commands" >&2; }
(
  cd "$fresh" || exit 9
  export DDPBISECT_WORKER=$worker REPRO_TIMEOUT=60 PATH="$(dirname "$bin"):$PATH"
  while read -r cmd; do
    [[ -z $cmd ]] && continue
    if [[ $cmd == cd* ]]; then eval "$cmd" || exit 9; continue; fi
    timeout 120 bash -c "$cmd" >"$tmp/cmd.out" 2>&1; rc=$?
    case $cmd in
      "bash run.sh" | "python3 repro.py") want=1 ;;  # the failure, reproduced
      *) want=0 ;;                                      # check: the expectation holds
    esac
    [[ $rc == "$want" ]] || { echo "'$cmd' exited $rc, want $want" >&2; tail -5 "$tmp/cmd.out" >&2; exit 1; }
  done <"$tmp/commands"
) && ok || bad "a Reproduce command of report.md failed in a fresh folder"
ls "$fresh/repro/ddpbisect-check/trials" >/dev/null 2>&1 && ok ||
  bad "check did not work under the repro's own folder (report.dir: ddpbisect-check)"

# The environment block is `python -m torch.utils.collect_env` of the same interpreter, field for
# field (the clock speed aside, which moves).
probe_py=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["environment"]["python_probe"])' "$out/report.json")
"$probe_py" -m torch.utils.collect_env >"$tmp/collect_env.txt" 2>/dev/null
py '
import re, sys
md, ref = open(sys.argv[1]).read(), open(sys.argv[2]).read()
block = re.search(r"`python -m torch.utils.collect_env`, run by .*?:\n\n```\n(.*?)```", md, re.S).group(1)
def fields(text):
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([^:\[][^:]*?):\s+(.*)$", line)
        if m and "MHz" not in m.group(1):
            out[m.group(1)] = m.group(2).strip()
        elif line.startswith("["):
            out[line] = ""
    return out
got, want = fields(block), fields(ref)
assert len(want) > 15, want
missing = {k: v for k, v in want.items() if got.get(k) != v}
assert not missing, f"report.md differs from collect_env on: {missing}"
' "$out/report.md" "$tmp/collect_env.txt" && ok || bad "report.md: the environment block is not collect_env"

# report.html: no raw null or [] shown; round time ticks; the trace axis numbers its trials.
py '
import re, sys
html = open(sys.argv[1]).read()
text = re.sub(r"<[^>]+>", "\n", html)
raw = [t.strip() for t in text.split("\n") if t.strip() in ("null", "[]", "{}")]
assert not raw, f"raw JSON in report.html: {raw}"
import math
for svg in re.findall(r"<svg id=\"timeline-.*?</svg>", html, re.S):
    ticks = [float(v) for v in re.findall(r"<text class=\"tick\"[^>]*>([\d.]+) s</text>", svg)]
    assert len(ticks) >= 3 and ticks[0] == 0, ticks
    step = ticks[1] - ticks[0]
    mant = step / 10 ** math.floor(math.log10(step))
    assert round(mant, 6) in (1, 2, 5), f"time ticks not round: {ticks}"
    assert all(abs(t - i * step) < 1e-6 for i, t in enumerate(ticks)), ticks
trials = [int(v) for v in re.findall(r"class=\"tick trial-tick\"[^>]*>(\d+)</text>", html)]
assert trials and trials[0] in (1, 2, 5, 10) and all(b - a == trials[0] for a, b in zip(trials, trials[1:])), trials
' "$out/report.html" && ok || bad "report.html: raw JSON, uneven ticks or no trial numbers"

# report.json: every documented field, with the right types.
py '
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
def need(obj, keys, where):
    missing = [k for k in keys if k not in obj]
    assert not missing, f"{where}: missing {missing}"
need(r, ["status", "signature", "original", "minimal", "reproduction", "trials", "elapsed_s", "repro", "environment"], "report")
need(r["signature"], ["category", "exception", "message", "frame", "ranks"], "signature")
for part in ("original", "minimal"):
    need(r[part], ["stage", "nodes", "procs_per_node", "world_size", "samples", "sample_indices", "components", "features", "params", "steps"], part)
need(r["reproduction"], ["runs", "failures", "rate"], "reproduction")
need(r["trials"], ["total", "failed", "passed", "infra", "cached"], "trials")
need(r["repro"], ["spec", "script"], "repro")
need(r["environment"], ["torch", "cuda", "cudnn", "nccl", "gpu_driver", "python", "os", "cpu", "gpus", "variables"], "environment")
assert r["status"] == "reduced" and r["signature"]["exception"] == "RuntimeError", r["signature"]
assert r["minimal"]["world_size"] == 2 and r["reproduction"]["rate"] == 1.0, r["minimal"]
assert r["environment"]["torch"], "torch version not found by the probe"
assert "NCCL_DEBUG" in r["environment"]["variables"], r["environment"]["variables"]
' "$out" && ok || bad "report.json: documented fields"

# No secret anywhere in the output (reports, repro, journal, trial folders).
if grep -rl "sekrit" "$out" >"$tmp/leaks"; then bad "secrets leaked into: $(tr '\n' ' ' <"$tmp/leaks")"; else ok; fi
grep -q "<redacted>" "$out/report.md" && ok || bad "report.md does not show redacted variables"

# run.sh (no ddpbisect) reproduces the same signature, as `explain` reads its rank logs.
DDPBISECT_WORKER=$worker bash "$out/repro/run.sh" >"$tmp/runsh" 2>&1 && bad "run.sh passed"
"$bin" explain --json "$out/repro" >"$tmp/explain.json" 2>/dev/null
py '
import json, sys
want = json.load(open(sys.argv[1] + "/report.json"))["signature"]
got = json.load(open(sys.argv[2]))["signature"]
for k in ("category", "exception", "frame"):
    assert want[k] == got[k], (k, want[k], got[k])
' "$out" "$tmp/explain.json" && ok || bad "run.sh did not reproduce the report's signature"

# repro.py: standalone PyTorch (no ddpbisect, no worker) fails with the same exception type.
exc=$(py 'import json,sys; print(json.load(open(sys.argv[1]))["signature"]["exception"])' "$out/report.json")
(cd "$tmp" && REPRO_TIMEOUT=60 timeout 120 python3 "$out/repro/repro.py" >"$tmp/py.out" 2>&1); rc=$?
[[ $rc == 1 ]] && grep -qE "^(\[rank[0-9]+\]: )?$exc: rank one broke" "$tmp/py.out" && ok ||
  { bad "repro.py: exit $rc, want 1 with '$exc: rank one broke'"; tail -20 "$tmp/py.out" >&2; }

# report.html: self-contained, rendered by headless Chromium; the DOM has the timeline.
grep -qE '(src|href)="https?:' "$out/report.html" && bad "report.html loads something from the network"
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $chrome ]]; then
  bad "no chromium to render report.html (scripts/setup.sh installs it)"
else
  flags=(--headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
    --disable-background-networking --hide-scrollbars "--user-data-dir=$tmp/chrome")
  timeout 120 "$chrome" "${flags[@]}" --window-size=1100,1400 --screenshot="$tmp/report.png" \
    "file://$out/report.html" >/dev/null 2>&1
  timeout 120 "$chrome" "${flags[@]}" --dump-dom "file://$out/report.html" >"$tmp/dom.html" 2>/dev/null
  py '
import json, struct, sys
from html.parser import HTMLParser
png = open(sys.argv[1], "rb").read()
assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", png[16:24])
assert (w, h) == (1100, 1400) and len(png) > 20000, (w, h, len(png))
class Walk(HTMLParser):
    def __init__(self):
        super().__init__(); self.svg = None; self.rows = {}; self.trials = 0
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg": self.svg = a.get("id")
        if tag == "g" and "rank-row" in a.get("class", ""):
            self.rows.setdefault(self.svg, []).append(a.get("data-status"))
        if tag == "circle" and a.get("class") == "trial" and self.svg == "reduction-trace": self.trials += 1
w = Walk(); w.feed(open(sys.argv[2]).read())
r = json.load(open(sys.argv[3] + "/report.json"))
first = w.rows.get("timeline-first", [])
assert len(first) == r["original"]["world_size"], first
assert first.count("root_cause") == 1 and "echo" in first, first
assert len(w.rows.get("timeline-minimal", [])) == r["minimal"]["world_size"], w.rows
journal = [l for l in open(sys.argv[3] + "/journal.jsonl") if json.loads(l).get("type") == "trial"]
assert w.trials == len(journal) > 5, (w.trials, len(journal))
' "$tmp/report.png" "$tmp/dom.html" "$out" && ok || bad "report.html: screenshot or DOM check"
fi

finish report/repro
