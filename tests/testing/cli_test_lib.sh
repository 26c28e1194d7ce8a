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
# and turns on set -euo pipefail.
set -euo pipefail
FLOWLOADER="$1"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
SANITIZED=0
if grep -qa -e __asan_init -e __tsan_init "$FLOWLOADER"; then SANITIZED=1; fi
