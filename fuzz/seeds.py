#!/usr/bin/env python3
"""Builds every fuzz target's seed corpus from the project's own material.

Usage: seeds.py SOURCE_DIR OUT_DIR  (writes OUT_DIR/TARGET/<sha1>, one file per seed)

The seeds are the fixtures the tests already use: specs (tests/specs, configs, the zoo), the
diagnosis fixtures (tests/diagnose/*/*/input, packed as fuzz/fuzz_util.hpp describes), and the
files of real reductions kept in tests/fuzz/seeds (journal.jsonl, trial folders with outcome.json,
config.json and rank logs; "$DIR" stands for the trial folder). Each file is cut to 64 KiB so
that libFuzzer's inputs stay small enough to mutate quickly.
"""
import hashlib
import pathlib
import re
import shutil
import sys

CAP = 64 * 1024


def main():
    src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    if out.exists():
        shutil.rmtree(out)
    seeds = {}

    def add(target, data):
        if isinstance(data, str):
            data = data.encode()
        seeds.setdefault(target, set()).add(data[:CAP])

    specs = sorted(
        p
        for pattern in ("tests/specs/**/*.yaml", "configs/**/*.yaml", "tests/zoo/**/*.yaml")
        for p in src.glob(pattern)
    )
    durations = {"250ms", "90s", "5m", "2h", "1.5", "0.5h", "10min", " 3s ", "0", "1e3s", ".5m"}
    samples = {"0-36,38-255", "0", "5", "1-1", " 0 - 3 , 7", "3-2", "0,,1", "9223372036854775806"}
    args = {"{samples}", "{{literal}}", "--lr={lr_steps}", "}}{{", "{", "{}", "a{b{c}"}
    for p in specs:
        text = p.read_text(errors="replace")
        add("spec_loader", text)
        durations.update(re.findall(r"\b\d+(?:\.\d+)?(?:ms|s|m|h|min)\b", text))
        samples.update(re.findall(r"samples: *\"?([0-9][0-9 ,\-]*)", text))
        args.update(a for a in re.findall(r"\"([^\"]*\{[^\"]*)\"", text))
    for d in durations:
        add("duration", d)
    for s in samples:
        add("index_set", s.strip())
    for a in args:
        add("placeholders", a)

    # Logs: every diagnosis fixture, alone for the stream parser, as its folder for explain.
    for case in sorted(src.glob("tests/diagnose/*/*/input")):
        files = sorted(p for p in case.rglob("*") if p.is_file())
        for p in files:
            add("stream_parser", p.read_bytes())
        add("explain", pack("d", case, files))
        if len(files) == 1:
            add("explain", pack("f", case, files))

    # Real reductions: journals, trial folders.
    seed_dir = src / "tests/fuzz/seeds"
    for p in sorted(seed_dir.glob("journal/*.jsonl")):
        add("journal", p.read_bytes())
    for trial in sorted(seed_dir.glob("trials/*")):
        files = sorted(p for p in trial.rglob("*") if p.is_file())
        add("explain", pack("d", trial, files))
        if (trial / "outcome.json").exists():
            add("outcome", (trial / "outcome.json").read_bytes())
        if (trial / "config.json").exists():
            add("rank_config", (trial / "config.json").read_bytes())

    # Escapers: hostile text as the e2e tests use it, and a few log lines; JUnit fields are
    # separated by 0x1f.
    hostile = [
        b"$(touch /tmp/pwned) `touch /tmp/pwned2`",
        b"it's \"quoted\" <b>bold</b> & *stars* _u_ | pipe; #",
        b"line1\nline2 \x1b[31mred\x1b[0m\r\x07",
        b"<script>alert(1)</script> <fuzz> ]]> &amp; &#0; &#xD800;",
        b"```python\nprint('x')\n```",
        b"`` ` ``",
        b"- list\n# heading\n1. item\n> quote\n[link](http://x) ![img](y)",
        b"python_exception snake_case _leading trailing_",
        b"\xc2\x9b31m C1 \xef\xbf\xbe \xef\xbf\xbf \xed\xa0\x80 \xc0\xaf \xff",
        b"name\x1ftype\x1fmessage\x1ftraceback\nline\x1fskipped\x1f2024-01-01T00:00:00\x1fstdout",
    ]
    for h in hostile:
        add("escapers", h)
    for p in sorted(src.glob("tests/diagnose/fixtures/*/input/*"))[:20]:
        if p.is_file():
            add("escapers", p.read_bytes()[:4096])

    for target, datas in seeds.items():
        d = out / target
        d.mkdir(parents=True, exist_ok=True)
        for data in datas:
            (d / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"seeds.py: {sum(len(v) for v in seeds.values())} seeds for {len(seeds)} targets in {out}")


def pack(header, root, files):
    """The packed form of files under root: header, then 0x1f PATH \\n CONTENT per file."""
    out = header.encode()
    for p in files:
        out += b"\x1f" + str(p.relative_to(root)).encode() + b"\n" + p.read_bytes()[: CAP // 2]
    return out


if __name__ == "__main__":
    main()
