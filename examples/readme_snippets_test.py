#!/usr/bin/python3
"""readme_snippets_test: the docs' C++ snippets are the example programs' text.

Every ```cpp block of README.md and docs/*.md must be, character for character, the text
between `// [readme:NAME]` and `// [/readme:NAME]` in one of the example files (which
Bazel compiles with -Werror=unused-result and the *_test scripts run), and every such
region must appear in one of those pages. Every `deps = ["//pkg:target"]` a snippet names
must be a dep of the examples/BUILD target whose srcs hold the file, so the docs name what
a user really has to depend on.

Usage: readme_snippets_test.py examples/BUILD README.md docs/*.md examples/*.cc
"""
import difflib
import os
import re
import sys

REGION = re.compile(r"^// \[readme:([a-z_]+)\]\n(.*?)^// \[/readme:\1\]\n", re.M | re.S)
CPP_BLOCK = re.compile(r"^```cpp\n(.*?)^```\n", re.M | re.S)
NAMED_DEPS = re.compile(r'deps = \[([^\]]*)\]')
LABEL = re.compile(r'"(//[^"]+|@[^"]+|:[^"]+)"')


def readme_blocks(readme_text):
    """[(line number, text)] of every ```cpp block."""
    return [(readme_text.count("\n", 0, m.start()) + 1, m.group(1))
            for m in CPP_BLOCK.finditer(readme_text)]


def example_regions(paths):
    """{(file name, region name): text} of every marked region."""
    regions = {}
    for path in paths:
        text = open(path).read()
        for m in REGION.finditer(text):
            regions[(os.path.basename(path), m.group(1))] = m.group(2)
        opened = re.findall(r"^// \[readme:([a-z_]+)\]$", text, re.M)
        if len(opened) != len(REGION.findall(text)):
            sys.exit(f"FAIL: {path}: a [readme:NAME] marker has no matching "
                     f"[/readme:NAME] line (found {opened})")
    return regions


def target_deps(build_text, file_name):
    """The deps labels of the examples/BUILD rule whose srcs list `file_name`."""
    for rule in re.split(r"\n(?=[a-z_]+\()", build_text):
        if re.search(r'srcs = \[[^\]]*"%s"' % re.escape(file_name), rule):
            deps = re.search(r"deps = \[([^\]]*)\]", rule)
            return {"//examples" + l if l.startswith(":") else l
                    for l in LABEL.findall(deps.group(1) if deps else "")}
    return None


def page_name(path):
    """README.md, or docs/NAME.md for a page under docs/."""
    base = os.path.basename(path)
    return base if base == "README.md" else f"docs/{base}"


def main(argv):
    build_path = argv[1]
    pages = [p for p in argv[2:] if p.endswith(".md")]
    sources = [p for p in argv[2:] if p.endswith(".cc")]
    blocks = []
    for path in pages:
        blocks += [(f"{page_name(path)}:{line}", block)
                   for line, block in readme_blocks(open(path).read())]
    regions = example_regions(sources)
    build_text = open(build_path).read()
    failures = []
    if not blocks:
        failures.append(f"no ```cpp block in {[page_name(p) for p in pages]}")
    used = set()
    for line, block in blocks:
        match = [key for key, text in regions.items() if text == block]
        if not match:
            nearest = max(regions, key=lambda k: difflib.SequenceMatcher(
                None, regions[k], block).ratio(), default=None)
            diff = "" if nearest is None else "".join(difflib.unified_diff(
                regions[nearest].splitlines(True), block.splitlines(True),
                f"examples/{nearest[0]} [readme:{nearest[1]}]", line))
            failures.append(f"{line}: this ```cpp block is no example's "
                            f"[readme:NAME] region (edit the example, then copy it)\n{diff}")
            continue
        used.update(match)
        file_name = match[0][0]
        deps = target_deps(build_text, file_name)
        if deps is None:
            failures.append(f"examples/BUILD has no rule with \"{file_name}\" in its srcs")
            continue
        for named in NAMED_DEPS.findall(block):
            for label in LABEL.findall(named):
                if label not in deps:
                    failures.append(f"{line}: names deps {label}, which the "
                                    f"target compiling {file_name} does not depend on "
                                    f"(its deps: {sorted(deps)})")
    for file_name, name in sorted(set(regions) - used):
        failures.append(f"examples/{file_name}: region [readme:{name}] is in no page "
                        f"(paste it into a ```cpp block, or drop the markers)")
    for failure in failures:
        print("FAIL:", failure)
    if failures:
        return 1
    print(f"PASS: {len(blocks)} snippets in {len(pages)} pages are example regions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
