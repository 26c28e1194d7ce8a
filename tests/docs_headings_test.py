#!/usr/bin/python3
"""docs_headings_test: every heading of the README before the docs split still has a home.

tests/readme_headings.tsv lists each heading of the old README.md (and a few bold-headed
paragraphs) with the file that holds its text now, and the heading it has there when it
was renamed. Each listed file must exist and have a Markdown heading (`#`, `##`, ...) with
that text. Every page of docs/ must also start, after its title, with a line saying what
a reader can do after reading it ("After reading this page ..."). A ```yaml block of a
page whose first line is `# NAME.yaml: ...`, for a spec given (runtime/specs/*.yaml, which
the tests parse and run), must be that spec verbatim.

Usage: docs_headings_test.py tests/readme_headings.tsv README.md docs/*.md
  tests/benchmarks/results/history.md runtime/specs/*.yaml
"""
import os
import re
import sys

HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.M)


def place(path):
    """The repository path of a file given to the test (README.md, docs/X.md, ...)."""
    for root in ("docs/", "tests/benchmarks/results/", "runtime/specs/"):
        i = path.rfind(root)
        if i >= 0:
            return path[i:]
    return os.path.basename(path)


def headings(text):
    """Every Markdown heading of `text` outside ``` blocks."""
    text = re.sub(r"^```.*?^```$", "", text, flags=re.M | re.S)
    return set(HEADING.findall(text))


def main(argv):
    table, files = argv[1], {place(p): p for p in argv[2:]}
    failures, rows, checked_specs = [], 0, 0
    for n, line in enumerate(open(table), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.rstrip("\n").split("\t")
        if len(fields) not in (2, 3):
            failures.append(f"{table}:{n}: want OLD HEADING<TAB>FILE[<TAB>NEW HEADING]")
            continue
        rows += 1
        old, where = fields[0], fields[1]
        want = fields[2] if len(fields) == 3 else old
        if where not in files:
            failures.append(f"{table}:{n}: '{old}' lives in {where}, which is not there "
                            f"(files: {sorted(files)})")
            continue
        if want not in headings(open(files[where]).read()):
            failures.append(f"{table}:{n}: {where} has no heading '{want}' (the home of the "
                            f"old README's '{old}')")
    for name, path in sorted(files.items()):
        if name.startswith("docs/"):
            lines = open(path).read().split("\n")
            if not (lines[0].startswith("# ") and len(lines) > 2 and
                    lines[2].startswith("After reading this page")):
                failures.append(f"{name}: after its title, the first line must say what a "
                                f"reader can do after reading it ('After reading this page ...')")
    specs = {os.path.basename(n): open(p).read() for n, p in files.items()
             if n.startswith("runtime/specs/")}
    for name, path in sorted(files.items()):
        if not name.endswith(".md"):
            continue
        text = open(path).read()
        for m in re.finditer(r"^```yaml\n(# ([a-z0-9_]+\.yaml):.*?)^```$", text, re.M | re.S):
            if m.group(2) in specs and m.group(1) != specs[m.group(2)]:
                line = text.count("\n", 0, m.start()) + 1
                failures.append(f"{name}:{line}: this ```yaml block is not runtime/specs/"
                                f"{m.group(2)} verbatim (copy the file)")
                continue
            if m.group(2) in specs:
                checked_specs += 1
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(f"PASS: {rows} old README headings have a home; {len(files)} files checked; "
          f"{checked_specs} spec blocks are runtime/specs/ files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
