"""A strict structural check of a report.md as GitHub renders it (no markdown renderer is
installed here): every code fence closes with a fence at least as long; <details> blocks have
the blank lines GitHub needs around markdown inside them; every table row has as many cells as
its header; outside code, no raw HTML other than <details>/<summary> and no bare control
character. Exit 1 with the problems listed.
Usage: md_check.py REPORT.md"""
import re
import sys


def cells(row):
    """The cells of a GFM table row: split on pipes that are not escaped (a code span does not
    protect a pipe in GFM), without the row's outer pipes."""
    row = row.strip()
    if row.startswith("|"):
        row = row[1:]
    if row.endswith("|") and not row.endswith("\\|"):
        row = row[:-1]
    return re.split(r"(?<!\\)\|", row)


def main(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    problems, fence, table_cols, details = [], None, None, 0
    for n, line in enumerate(lines, 1):
        if fence:
            m = re.match(r"^(`{3,})\s*$", line)
            if m and len(m.group(1)) >= len(fence):
                fence = None
            continue
        m = re.match(r"^(`{3,})([\w-]*)\s*$", line)
        if m:
            fence = m.group(1)
            table_cols = None
            continue
        if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", line):
            problems.append(f"{n}: a control character outside code: {line!r}")
        stripped = re.sub(r"`+[^`]*`+", "", line)  # code spans may hold anything
        stripped = re.sub(r"\\.", "", stripped)  # escaped characters are text
        for tag in re.findall(r"</?([A-Za-z][\w-]*)[^>]*>", stripped):
            if tag not in ("details", "summary"):
                problems.append(f"{n}: raw HTML <{tag}> outside code: {line!r}")
        if line == "<details>":
            details += 1
        if line.startswith("<summary>") and lines[n] != "":
            problems.append(f"{n}: no blank line after <summary>: markdown inside would not render")
        if line == "</details>":
            details -= 1
            if lines[n - 2] != "":
                problems.append(f"{n}: no blank line before </details>")
        if line.startswith("|"):
            count = len(cells(line))
            if table_cols is None:
                table_cols = count
            elif count != table_cols:
                problems.append(f"{n}: {count} cells, the table has {table_cols}: {line!r}")
        else:
            table_cols = None
    if fence:
        problems.append(f"a code fence {fence} never closes")
    if details:
        problems.append("<details> and </details> do not pair up")
    for p in problems:
        print(f"{path}:{p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
