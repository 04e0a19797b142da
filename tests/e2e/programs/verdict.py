"""A command workload whose verdict is its first argument, for the exit-code tests:
pass, value_error (the pinned failure), key_error (a different one), infra (a connection that
could not be made: not the workload's bug), or culprit (fails when sample 3 is in the trial,
whose samples are the second argument)."""
import sys

what = sys.argv[1]
if what == "value_error":
    raise ValueError("the pinned failure")
if what == "key_error":
    raise KeyError("a different failure")
if what == "infra":
    raise RuntimeError("The client socket has failed to connect to [localhost]:1 (errno: 111 - Connection refused)")
if what == "culprit":
    samples = set()
    for part in filter(None, sys.argv[2].split(",")):
        a, _, b = part.partition("-")
        samples.update(range(int(a), int(b or a) + 1))
    if 3 in samples:
        raise ValueError("sample 3 is corrupt")
