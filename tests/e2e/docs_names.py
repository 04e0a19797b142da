"""docs/architecture.md stays the current map of the code: every path it names in backticks
(src/..., tests/..., python/...) must exist in the checkout, and so must each source file a
folder's table row names (in that folder, or, named as another folder's, in src/ or python/). Names with placeholders (<stage>, NNNN, *, ...) are patterns, not paths, and are
skipped. Exit 1 with each missing name and its line.
Usage: docs_names.py REPO_ROOT [DOC...]   (default: docs/architecture.md)"""
import os
import re
import sys

ROOTS = ("src", "tests", "python", "docs", "scripts", "bench", "cmake", "repro_templates",
         "configs", "examples", ".ci")
SOURCE = {"src": re.compile(r"^[\w.+-]+\.(?:cpp|hpp|def)$"),
          "python": re.compile(r"^[\w.+-]+\.py$"), "tests": re.compile(r"^[\w.+-]+\.(?:cpp|hpp|py|sh)$")}
PATTERN = re.compile(r"[<>*…{}]|\bN+\b|NAME|NNN|\.\.\.")


def spans(line):
    return re.findall(r"`([^`\n]+)`", line)


def files_under(folder):
    out = set()
    for dirpath, _, names in os.walk(folder):
        out.update(names)
    return out


def check(root, doc):
    missing = []
    row_folder = None
    everywhere = set()
    for top in ("src", "python", "tests"):
        everywhere |= files_under(os.path.join(root, top))
    for n, line in enumerate(open(os.path.join(root, doc), encoding="utf-8"), 1):
        # A table row about one folder: "| `src/observe` | `verdict.cpp` (...) ..."
        m = re.match(r"^\|\s*`((?:src|python|tests)/[\w/]+)`\s*\|", line)
        row_folder = m.group(1) if m else None
        here = files_under(os.path.join(root, row_folder)) if row_folder else set()
        for span in spans(line):
            token = span.strip().split(" ")[0].rstrip(",:;")
            if PATTERN.search(token):
                continue
            if token.split("/")[0] in ROOTS and "/" in token:
                if not os.path.exists(os.path.join(root, token.split(":")[0])):
                    missing.append(f"{doc}:{n}: `{token}` does not exist")
            elif row_folder and SOURCE[row_folder.split("/")[0]].match(token) and token not in here:
                # Another folder's file, named as such ("the worker's probe.cpp"), is fine.
                if token not in everywhere:
                    missing.append(f"{doc}:{n}: `{token}` is in no folder of src/, python/ or tests/")
    return missing


def main(argv):
    root = argv[1]
    docs = argv[2:] or ["docs/architecture.md"]
    missing = [m for d in docs for m in check(root, d)]
    for m in missing:
        print(m)
    print(f"docs_names: {len(missing)} missing name(s) in {', '.join(docs)}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
