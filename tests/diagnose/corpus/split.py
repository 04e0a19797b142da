#!/usr/bin/env python3
"""Which side of the corpus a source belongs to: `split.py SOURCE` prints dev or holdout.

The side is a function of the source alone (SHA-1, 45 % holdout), so it is fixed before anyone
reads the case; sources that tests/diagnose/real already uses are dev."""
import hashlib
import pathlib
import sys

REAL = pathlib.Path(__file__).resolve().parent.parent / "real"


def normalize(source):
    return source.strip().split()[0].rstrip(",.;").lower()


def used_by_real():
    seen = set()
    for expect in REAL.glob("*/expect"):
        for line in expect.read_text().splitlines():
            if line.startswith("# source:"):
                seen.add(normalize(line.split(":", 1)[1]))
    return seen


def side(source):
    key = normalize(source)
    if key in used_by_real():
        return "dev"
    return "holdout" if int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) % 20 < 9 else "dev"


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: split.py SOURCE")
    print(side(sys.argv[1]))
