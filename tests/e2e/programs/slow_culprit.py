"""A command workload for the terminal tests: rank 1 fails when sample 5 and component "c" are
in the trial; every trial takes a while (longer for big ones) so that a status line has time to
tick. The failure message carries HTML and an ANSI colour code, which must show as text."""
import os
import sys
import time


def indices(spec):
    out = set()
    for part in filter(None, spec.split(",")):
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


samples, components = indices(sys.argv[1]), sys.argv[2].split(",")
time.sleep(float(os.environ.get("SLOW_CULPRIT_SLEEP", "0.3")) * (3 if len(samples) > 4 else 1))
if int(os.environ["RANK"]) == 1 and 5 in samples and "c" in components:
    raise RuntimeError("planted failure <b>bold</b> \x1b[31mred\x1b[0m")
