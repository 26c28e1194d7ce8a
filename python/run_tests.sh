#!/usr/bin/env bash
# run_tests.sh: builds the Python module and the binaries its tests compare with (in the
# default configuration, which .bazelrc already builds with -O2, so CI reuses the build of
# `bazel test //...` instead of compiling everything again under -c opt),
# then runs the pytest suite in python/tests/ with Debian's python3. One line per test
# is printed as `//python/tests/FILE::TEST PASSED|FAILED|SKIPPED`, the form .ci/run
# counts, then pytest's own "N passed" line. Exits non-zero when a test fails.
#
#   python/run_tests.sh [pytest args, e.g. -k hold]
set -uo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
bazel build //python:flowloader //runtime:flowloader //tests/benchmarks:dump_batches ||
  exit 1
# bazel-bin follows the last build's config (another build may have moved it): use the
# default configuration's output directory itself.
BIN="$PWD/bazel-out/k8-fastbuild/bin"
export FLOWLOADER_PYTHONPATH="$BIN/python"
export FLOWLOADER_BIN="$BIN/runtime/flowloader"
export FLOWLOADER_DUMP_BATCHES="$BIN/tests/benchmarks/dump_batches"
export PYTHONPATH="$FLOWLOADER_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}"
log=$(mktemp)
"$PY" -m pytest -v -p no:cacheprovider -rs python/tests "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
# pytest -v prints "python/tests/test_x.py::test_y PASSED   [ 10%]".
sed -nE 's#^(python/tests/[^ ]+) (PASSED|FAILED|SKIPPED|ERROR).*#//\1 \2#p' "$log" | sed "s/ ERROR$/ FAILED/"
rm -f "$log"
exit "$rc"
