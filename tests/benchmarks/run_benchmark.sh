#!/usr/bin/env bash
# run_benchmark.sh: the one entry point of the side-by-side benchmark.
#
#   tests/benchmarks/run_benchmark.sh [--images=2000] [--reps=3] [--curve] [bench.py flags]
#
# Builds //runtime:flowloader, //tests/benchmarks:jpeg_roofline and
# //tests/benchmarks:dump_batches (the benchmark targets are tagged manual, so they are
# named explicitly), copies the three binaries to a private temp dir (so another build in
# the same output tree, e.g. --config=asan, cannot swap them mid-run; a sanitizer build is
# refused), then runs bench.py with Debian's /usr/bin/python3 (python3-torch 1.13,
# torchvision 0.14), not the pyenv python3 on PATH. Results: tests/benchmarks/results/
# latest.{md,json} (and curve.{md,json} with --curve). Dataset cache: <repo>/.bench_data/.
# Any extra flags go to bench.py (see `/usr/bin/python3 tests/benchmarks/bench.py --help`).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO="$(pwd)"
PY=/usr/bin/python3
TARGETS=(//runtime:flowloader //tests/benchmarks:jpeg_roofline //tests/benchmarks:dump_batches)

for a in "$@"; do
  case "$a" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exec "$PY" tests/benchmarks/bench.py --help ;;
  esac
done

[ -x "$PY" ] || { echo "run_benchmark.sh: $PY not found (apt-get install python3-torch python3-torchvision)" >&2; exit 2; }
[ -x /usr/bin/prometheus ] || echo "run_benchmark.sh: /usr/bin/prometheus missing; pass --no_prometheus to skip the metrics-on run" >&2

BIN_DIR="$(mktemp -d /tmp/flowloader-bench-bin.XXXXXX)"
trap 'rm -rf "$BIN_DIR"' EXIT

copy_binaries() {
  local bazel_bin
  bazel_bin="$(bazel info bazel-bin 2>/dev/null)"
  cp "$bazel_bin/runtime/flowloader" "$bazel_bin/tests/benchmarks/jpeg_roofline" \
     "$bazel_bin/tests/benchmarks/dump_batches" "$BIN_DIR/"
  # Refuse sanitizer builds: another user's `--config=asan` shares this output tree.
  ! grep -aqE '__(asan|tsan|ubsan)_init' "$BIN_DIR/flowloader" "$BIN_DIR/dump_batches"
}

echo "run_benchmark.sh: building ${TARGETS[*]}"
ok=0
for attempt in 1 2 3; do
  if bazel build "${TARGETS[@]}" >"$BIN_DIR/build.log" 2>&1 && copy_binaries; then ok=1; break; fi
  tail -20 "$BIN_DIR/build.log" >&2
  echo "run_benchmark.sh: build failed or binaries are sanitizer builds (attempt $attempt of 3)" >&2
  # Others edit the tree concurrently; a broken build is often fixed a minute later.
  [ "$attempt" = 3 ] || sleep 30
done
[ "$ok" = 1 ] || { echo "run_benchmark.sh: could not get plain optimized binaries" >&2; exit 1; }

BUILD_INFO="bazel build (repo .bazelrc: -O2 -march=x86-64-v2), $(gcc --version | head -1)"
rc=0
"$PY" tests/benchmarks/bench.py --bins="$BIN_DIR" --build_info="$BUILD_INFO" "$@" || rc=$?
exit "$rc"
