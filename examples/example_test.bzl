"""example_prints_line_test: an example program run on a dataset made for it."""

def example_prints_line_test(name, program, want):
    """prints_line_test.sh runs `program` on a small dataset; it passes on the line `want`."""
    native.sh_test(
        name = name,
        size = "small",
        srcs = ["prints_line_test.sh"],
        args = [
            "$(location :%s)" % program,
            "$(location //runtime:flowloader)",
            '"%s"' % want,
        ],
        data = [
            ":" + program,
            "//runtime:flowloader",
        ],
    )
