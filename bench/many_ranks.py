"""Many-rank logs for `ddpbisect explain`: N ranks end with the same NCCL watchdog timeout and
`terminate called after throwing an instance of 'c10::DistBackendError'`; one rank (the culprit)
ends with a `torch.OutOfMemoryError` traceback in user code. No capture times anywhere, so the
culprit can only be told by structure: its story differs from everyone else's (issue #27).

Three forms of the same job: a folder of per-rank files (rank0.log ...), a torchrun --log-dir
tree (<run_id>/attempt_0/<local_rank>/stderr.log) and one combined console log ([rankN]: tags).

  many_ranks.py generate FORM N CULPRIT OUT     write one form (per-rank | log-dir | console)
  many_ranks.py check DDPBISECT N CULPRIT       explain each form; exit 1 unless each names the
                                                culprit rank, cuda_oom, the echoes as echoes
  many_ranks.py bench DDPBISECT [N]             time and peak memory of explain on each form at
                                                N ranks (default 1024) against grep on the same
                                                files; targets: <= 1 s and <= 32 MB each
"""
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

FORMS = ("per-rank", "log-dir", "console")


def rank_lines(r, culprit):
    lines = [f"[Rank {r}] epoch 3 step 120 loss 2.3{r % 10}"]
    if r == culprit:
        return lines + [
            "Traceback (most recent call last):",
            '  File "/job/train.py", line 88, in <module>',
            "    main()",
            '  File "/job/train.py", line 61, in main',
            "    loss.backward()",
            '  File "/usr/lib/python3/dist-packages/torch/_tensor.py", line 521, in backward',
            "    torch.autograd.backward(",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
            "total capacity of 79.15 GiB of which 1.02 GiB is free.",
        ]
    timeout = (f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=481, "
               "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
               "milliseconds before timing out.")
    return lines + [
        f"[E1201 10:00:00.000000000 ProcessGroupNCCL.cpp:632] {timeout}",
        f"[E1201 10:00:00.000000000 ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) "
        f"Rank {r}]  failure detected by watchdog at work sequence id: 481 PG status: last "
        "enqueued work: 481, last completed work: 480",
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank {r}] Process group watchdog thread "
        f"terminated with exception: {timeout}",
    ]


def generate(form, n, culprit, out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if form == "console":
        with open(out / "console.log", "w") as f:
            for r in range(n):
                f.writelines(f"[rank{r}]:{line}\n" for line in rank_lines(r, culprit))
        return out / "console.log"
    for r in range(n):
        if form == "per-rank":
            path = out / f"rank{r}.log"
        else:
            path = out / "job-1" / "attempt_0" / str(r) / "stderr.log"
            path.parent.mkdir(parents=True, exist_ok=True)
            (path.parent / "stdout.log").write_text("")
        path.write_text("\n".join(rank_lines(r, culprit)) + "\n")
    return out


def explain(binary, path):
    start = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run([binary, "explain", "--json", str(path)], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return proc, seconds, peak_kb if peak_kb > before else None


def verdict(proc, n, culprit):
    """What is wrong with one explain's answer, or None."""
    if proc.returncode != 0:
        return f"exit {proc.returncode}: {proc.stderr.strip()[:200]}"
    d = json.loads(proc.stdout)
    root = d["root_cause"]
    if root["rank"] != culprit or root["category"] != "cuda_oom":
        return f"root cause rank {root['rank']} {root['category']}, want rank {culprit} cuda_oom"
    echoes = [s for s in d["ranks"] if s["rank"] != culprit]
    wrong = [s["rank"] for s in echoes if s["echo_of"] != culprit or s["primary"]]
    if len(echoes) != n - 1 or wrong:
        return f"{len(echoes)} other ranks, not echoes of {culprit}: {wrong[:8]}"
    return None


def check(binary, n, culprit):
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for form in FORMS:
            path = generate(form, n, culprit, pathlib.Path(tmp) / form)
            proc, _, _ = explain(binary, path)
            why = verdict(proc, n, culprit)
            print(f"{form} N={n} culprit={culprit}: " + ("ok" if not why else "FAIL " + why))
            bad += why is not None
    return 1 if bad else 0


def bench(binary, n):
    """Each form run in its own child so that ru_maxrss is that run's peak."""
    fails = 0
    with tempfile.TemporaryDirectory() as tmp:
        for form in FORMS:
            path = generate(form, n, n // 3, pathlib.Path(tmp) / form)
            size = sum(p.stat().st_size for p in pathlib.Path(path).rglob("*") if p.is_file()) \
                if pathlib.Path(path).is_dir() else pathlib.Path(path).stat().st_size
            # Baseline in the same run: grep over the same files for the lines that matter.
            start = time.perf_counter()
            subprocess.run(["grep", "-rEc", "Error|Watchdog|terminate called|Traceback", str(path)],
                           capture_output=True)
            grep_s = time.perf_counter() - start
            runs = []
            for _ in range(3):
                out = subprocess.run([sys.executable, __file__, "_one", binary, str(path)],
                                     capture_output=True, text=True)
                runs.append(json.loads(out.stdout))
            best = min(runs, key=lambda r: r["seconds"])
            peak_mb = max(r["peak_kb"] for r in runs) / 1024
            why = verdict(subprocess.CompletedProcess([], best["rc"], best["stdout"], ""), n, n // 3)
            ok = best["seconds"] <= 1.0 and peak_mb <= 32 and why is None
            fails += not ok
            print(f"{form:9s} N={n}: {size / 1e6:.1f} MB in {best['seconds']:.3f} s (target <= 1 s), "
                  f"peak {peak_mb:.1f} MB (target <= 32), grep {grep_s:.3f} s, "
                  f"ratio {best['seconds'] / max(grep_s, 1e-3):.1f}x grep"
                  + ("" if why is None else f"; WRONG: {why}") + ("" if ok else "  <- MISSED"))
    return 1 if fails else 0


def one(binary, path):
    proc, seconds, _ = explain(binary, path)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(json.dumps({"rc": proc.returncode, "stdout": proc.stdout, "seconds": seconds,
                      "peak_kb": peak}))
    return 0


def main(argv):
    if len(argv) >= 5 and argv[0] == "generate" and argv[1] in FORMS:
        generate(argv[1], int(argv[2]), int(argv[3]), argv[4])
        return 0
    if len(argv) == 4 and argv[0] == "check":
        return check(argv[1], int(argv[2]), int(argv[3]))
    if len(argv) in (2, 3) and argv[0] == "bench":
        return bench(argv[1], int(argv[2]) if len(argv) == 3 else 1024)
    if len(argv) == 3 and argv[0] == "_one":
        return one(argv[1], argv[2])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
