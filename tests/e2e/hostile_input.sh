#!/usr/bin/env bash
# Hostile input stays inert. A spec whose name, argv and variables hold shell syntax ($(...),
# backticks, ;), HTML, markdown, ANSI codes, quotes and newlines, and a workload whose failure
# message holds the same: the ranks get every value literally (ddpbisect run, and repro/run.sh
# without ddpbisect); report.md, report.html and check's JUnit XML show the text and never
# become markup; nothing is ever executed. The prefix, ssh and slurm launchers pass hosts and
# arguments as argv (fake ssh/srun/prefix programs record what they get; the fake ssh runs its
# command through sh -c, as sshd does).
# Usage: hostile_input.sh DDPBISECT REPO_ROOT
set -u
source "$(dirname "$0")/lib.sh"
bin=$(realpath "$1") root=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOSTILE_RECORD_DIR=$tmp/records HOSTILE_PWNED=$tmp/pwned
mkdir -p "$HOSTILE_RECORD_DIR" "$tmp/fake" "$tmp/work"

# The values, as YAML double-quoted scalars (\e is ESC, \n a newline) and as Python expects them.
a1='$(touch '$tmp'/pwned-arg1)'
a2='`touch '$tmp'/pwned-arg2`'
a3='it'"'"'s \"quoted\" <b>bold</b> & *stars* _u_ | pipe; touch '$tmp'/pwned-arg3 #'
a4='line1\nline2 \e[31mred\e[0m'
envv='$(touch '$tmp'/pwned-env) `touch '$tmp'/pwned-env2`'
write_spec() {  # write_spec FILE [LAUNCHER-YAML]
  cat >"$1" <<YAML
version: 1
name: "hostile <i>name</i> \$(touch $tmp/pwned-name)"
workload:
  command: [python3, $root/tests/e2e/programs/hostile.py, "$a1", "$a2", "$a3", "$a4", "{samples}"]
  cwd: $tmp/work  # isolated: the records and any pwned-* file land outside it, where we look
  preload: none  # hostile.py imports no torch: a warm start would import it for nothing
  samples: 4
  env: {HOSTILE_ENV: "$envv"}
stages:
  - {name: one, nodes: 1, procs_per_node: 1}
${2:-}
YAML
}
write_spec "$tmp/spec.yaml"
"$bin" validate "$tmp/spec.yaml" >/dev/null 2>"$tmp/validate.err" || { bad "the hostile spec is not valid"; cat "$tmp/validate.err" >&2; }

# records_ok DESCRIPTION: every record so far holds the values literally; then clears them.
records_ok() {
  python3 - "$HOSTILE_RECORD_DIR" "$tmp" <<'PY' && ok || bad "$1: a rank did not get the values literally"
import glob, json, sys
d, tmp = sys.argv[1], sys.argv[2]
want = [f"$(touch {tmp}/pwned-arg1)", f"`touch {tmp}/pwned-arg2`",
        f"it's \"quoted\" <b>bold</b> & *stars* _u_ | pipe; touch {tmp}/pwned-arg3 #",
        "line1\nline2 \x1b[31mred\x1b[0m"]
env = f"$(touch {tmp}/pwned-env) `touch {tmp}/pwned-env2`"
files = glob.glob(d + "/*.json")
assert files, "no rank ran"
for f in files:
    r = json.load(open(f))
    assert r["argv"][:4] == want, (r["argv"], want)
    assert r["env"] == env, (r["env"], env)
PY
  rm -f "$HOSTILE_RECORD_DIR"/*.json
}
nothing_ran() {
  if compgen -G "$tmp/pwned*" >/dev/null; then bad "$1: something was executed: $(ls "$tmp"/pwned*)"; else ok; fi
}

# 1. A reduction: the ranks, the reports.
(cd "$tmp" && "$bin" spec.yaml --out "$tmp/out" --quiet --confirm 1 >/dev/null 2>"$tmp/reduce.err")
[[ -f $tmp/out/report.md ]] && ok || { bad "the reduction wrote no report"; cat "$tmp/reduce.err" >&2; }
records_ok "reduce"
python3 "$root/tests/e2e/md_check.py" "$tmp/out/report.md" && ok || bad "report.md: hostile text became markup"
python3 - "$tmp/out/report.md" <<'PY' && ok || bad "report.md: the message is not shown literally"
import re, sys
md = open(sys.argv[1]).read()
# In the traceback's code block the message is verbatim (ESC shown as its picture).
assert "hostile </pre><script>alert(1)</script> ```fence``` | *md*" in md
assert "\u241b[31mred\u241b[0m" in md and "\x1b" not in md
# Outside code (the headline) every markup character is escaped: it renders as the text it is.
head = md.split("\n")[0]
assert head.startswith("# rank 0: RuntimeError: hostile \\</pre\\>\\<script\\>alert"), head
assert "\\`\\`\\`fence\\`\\`\\` \\| \\*md\\* \\_x\\_ \\[a\\](http://x)" in head, head
PY
python3 - "$tmp/out/report.html" <<'PY' && ok || bad "report.html: hostile text became markup"
import sys
from html.parser import HTMLParser
class Walk(HTMLParser):
    def __init__(self):
        super().__init__(); self.tags = []; self.text = []
    def handle_starttag(self, tag, attrs): self.tags.append(tag)
    def handle_data(self, data): self.text.append(data)
w = Walk(); w.feed(open(sys.argv[1]).read())
assert "script" not in w.tags, "a <script> element"
text = "".join(w.text)
assert "</pre><script>alert(1)</script>" in text, "the message is not in the page as text"
assert "hostile <i>name</i>" in text
assert "\x1b" not in text
PY

# 2. repro/run.sh, without ddpbisect: the same values reach the rank; nothing runs.
(cd "$tmp" && bash "$tmp/out/repro/run.sh" >/dev/null 2>&1)
records_ok "run.sh"
nothing_ran "reduce and run.sh"

# 3. check --junit: valid XML of the schema CI reads, the message as text.
"$bin" check "$tmp/out/repro/repro.yaml" --expect pass --junit "$tmp/junit.xml" >/dev/null 2>&1
python3 "$root/tests/e2e/junit_check.py" "$tmp/junit.xml" && ok || bad "JUnit: not valid"
python3 - "$tmp/junit.xml" <<'PY' && ok || bad "JUnit: the message is not there as text"
import sys, xml.etree.ElementTree as ET
f = ET.parse(sys.argv[1]).getroot().find("testsuite/testcase/failure")
assert "</pre><script>alert(1)</script>" in f.get("message") and "$(touch" in f.text, f.attrib
assert "hostile <i>name</i>" in ET.parse(sys.argv[1]).getroot().find("testsuite").get("name")
PY
rm -f "$HOSTILE_RECORD_DIR"/*.json

# 4. Launchers: hosts and arguments travel as argv. Fake programs record their argv (NUL-separated).
cat >"$tmp/fake/prefix" <<'SH'
#!/usr/bin/env bash
printf '%s\0' "$@" >"$HOSTILE_RECORD_DIR/prefix.$$.argv"
shift  # the host
exec "$@"
SH
cat >"$tmp/fake/ssh" <<'SH'
#!/usr/bin/env bash
printf '%s\0' "$@" >"$HOSTILE_RECORD_DIR/ssh.$$.argv"
for a; do [[ $a == -O ]] && exit 0; done  # ControlMaster checks and exits
exec sh -c "${!#}"  # the remote side: sshd runs the command string through the user's shell
SH
cat >"$tmp/fake/srun" <<'SH'
#!/usr/bin/env bash
printf '%s\0' "$@" >"$HOSTILE_RECORD_DIR/srun.$$.argv"
while [[ $# -gt 0 && $1 == -* ]]; do [[ $1 == --chdir=* ]] && cd "${1#--chdir=}"; shift; done
exec "$@"
SH
chmod +x "$tmp/fake/"*
host='h;touch${IFS}'$tmp'/pwned-host;$(touch${IFS}'$tmp'/pwned-host2)`id`'
for kind in prefix ssh slurm; do
  extra="prefix: \"$tmp/fake/prefix {host}\""
  [[ $kind == prefix ]] || extra="master_addr: 127.0.0.1"
  write_spec "$tmp/$kind.yaml" "launcher: {kind: $kind, hosts: [\"$host\"], $extra}"
  PATH="$tmp/fake:$PATH" "$bin" run "$tmp/$kind.yaml" --out "$tmp/run-$kind" >"$tmp/$kind.out" 2>&1
  grep -q '^fail: ' "$tmp/$kind.out" && ok || { bad "$kind: the trial did not run to its failure"; cat "$tmp/$kind.out" >&2; }
  records_ok "$kind launcher" 
  python3 - "$HOSTILE_RECORD_DIR" "$kind" "$host" <<'PY' && ok || bad "$kind: the host did not reach the launcher's program as one argv word"
import glob, sys
d, kind, host = sys.argv[1:]
prog = {"prefix": "prefix", "ssh": "ssh", "slurm": "srun"}[kind]
runs = [open(f, "rb").read().decode().split("\0")[:-1] for f in glob.glob(f"{d}/{prog}.*.argv")]
assert runs, "the launcher's program never ran"
word = {"prefix": host, "ssh": host, "slurm": "--nodelist=" + host}[kind]
assert any(word in argv for argv in runs), runs
PY
  rm -f "$HOSTILE_RECORD_DIR"/*.argv
done
nothing_ran "launchers"
finish hostile_input
