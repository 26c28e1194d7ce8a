# cli_test_lib.sh: the preamble the flowloader command line's shell tests share. A test
# whose first argument is the binary starts with
#
#   source tests/testing/cli_test_lib.sh "$@"
#
# (relative to the workspace: Bazel runs a test from its runfiles root) and its sh_test
# lists //tests:cli_test_lib in deps. It sets:
#   FLOWLOADER  the binary under test ($1)
#   PY          the Python the tests script with (numpy, PIL)
#   TMP         the test's scratch directory (TEST_TMPDIR under Bazel)
#   SANITIZED   1 for an ASan/TSan build, whose shadow memory no RSS bound allows for
#   fail MSG    prints "FAIL: MSG" and exits 1
#   run_spec_within_limit TEST NAME LIMIT_MB SAMPLES SKIPS
#               runs $TMP/NAME.yaml under /usr/bin/time -v and checks that it delivered
#               SAMPLES, skipped SKIPS as op_memory, and peaked within LIMIT_MB (not
#               checked when SANITIZED)
# and turns on set -euo pipefail.
set -euo pipefail
FLOWLOADER="$1"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
SANITIZED=0
if grep -qa -e __asan_init -e __tsan_init "$FLOWLOADER"; then SANITIZED=1; fi

run_spec_within_limit() {
  local test="$1" name="$2" limit_mb="$3" samples="$4" skips="$5"
  /usr/bin/time -v "$FLOWLOADER" run --spec="$TMP/$name.yaml" --metrics_address= --noprogress \
    --summary_json="$TMP/$name.json" >/dev/null 2>"$TMP/$name.err" \
    || fail "$name: run exited $?: $(grep -v '^\s' "$TMP/$name.err" | tail -3)"
  "$PY" - "$test" "$name" "$TMP/$name.json" "$TMP/$name.err" "$limit_mb" "$SANITIZED" \
    "$samples" "$skips" <<'PYEOF'
import json, re, sys
test, name, summary, log, limit_mb, sanitized, samples, skips = sys.argv[1:]
s = json.load(open(summary))
kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(log).read()).group(1))
print(f"{test}: {name}: {s['samples']} samples, skipped {s['errors']}, "
      f"peak RSS {kb / 1024:.0f} MiB (limit {limit_mb})")
assert s["samples"] == int(samples), s
assert s["skipped"] == int(skips) and s["errors"].get("op_memory", 0) == int(skips), s
if sanitized == "0":
    assert kb / 1024 <= int(limit_mb), f"{name}: peak RSS {kb / 1024:.0f} MiB over {limit_mb}"
PYEOF
}
