"""A command workload for the hostile-input test: it records the argv and the HOSTILE_ENV
variable it was given (to $HOSTILE_RECORD_DIR/rank<R>-<pid>.json), then fails with a message full
of HTML, markdown, an ANSI code, shell syntax, quotes and a newline."""
import json
import os
import sys

rank = os.environ.get("RANK", "?")
record = {"argv": sys.argv[1:], "env": os.environ.get("HOSTILE_ENV")}
with open(os.path.join(os.environ["HOSTILE_RECORD_DIR"], f"rank{rank}-{os.getpid()}.json"), "w") as f:
    json.dump(record, f)
raise RuntimeError(
    "hostile </pre><script>alert(1)</script> ```fence``` | *md* _x_ [a](http://x) "
    "\x1b[31mred\x1b[0m $(touch " + os.environ["HOSTILE_PWNED"] + "-msg) `id` it's \"q\"\nsecond line"
)
