#!/usr/bin/env bash
# run_tar_fuzz.sh: build the tar-index libFuzzer target (tar_fuzz_body.h) with clang
# (fuzz_common.sh) and fuzz it for a bounded time; its share of CI's 90 s fuzz budget
# (run_fuzz.sh has the rest). Seeds are archives GNU tar writes here (ustar, GNU long names, pax, members in
# sub-directories, webdataset samples) plus the checked-in tar_regressions/.
#
#   tests/fuzz/run_tar_fuzz.sh [SECONDS]     default 15 (env TAR_FUZZ_SECONDS also works)
#   env: FUZZ_WORK=DIR (build directory, reused), FUZZ_ARTIFACTS=DIR (reproducers)
#
# Exits non-zero if the build fails, libFuzzer reports a crash, timeout or OOM, or it ran
# fewer than 1000 inputs. Copy a reproducer into tests/fuzz/tar_regressions/ and
# `bazel test //tests/fuzz:tar_fuzz_regression_test` replays it under gcc (and asan).
set -euo pipefail

SECONDS_BUDGET="${1:-${TAR_FUZZ_SECONDS:-15}}"
HERE="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TMP_BASE="${TEST_TMPDIR:-${TMPDIR:-/tmp}}"
WORK="${FUZZ_WORK:-$(mktemp -d "$TMP_BASE/tar_fuzz.XXXXXX")}/tar"
ARTIFACTS="${FUZZ_ARTIFACTS:-${TEST_UNDECLARED_OUTPUTS_DIR:-$WORK}/artifacts}"
CORPUS="$WORK/corpus"
SEEDS="$WORK/seeds"
mkdir -p "$WORK" "$CORPUS" "$SEEDS" "$ARTIFACTS"
FUZZ_NAME=run_tar_fuzz.sh
# shellcheck source=tests/fuzz/fuzz_common.sh
source "$HERE/fuzz_common.sh"

SRCS=(
  stages/core/log.cc
  stages/core/one_line.cc
  stages/core/sample_error.cc
  stages/reader/tar_index.cc
  stages/reader/internal/shard_names.cc
  tests/fuzz/tar_fuzz_body.cc
  tests/fuzz/tar_index_fuzzer.cc
)

t0=$(date +%s)
fuzz_build "$WORK/obj" "${FUZZ_SAN[@]}" -fsanitize=fuzzer-no-link -- "${SRCS[@]}"
"$CXX" "${FUZZ_SAN[@]}" -fsanitize=fuzzer "${OBJS[@]}" -o "$WORK/tar_index_fuzzer" \
  "${FUZZ_ABSL_LIBS[@]}" -lpthread
echo "run_tar_fuzz.sh: built in $(( $(date +%s) - t0 )) s"

# Seeds: real archives from GNU tar in each format.
SRC="$WORK/seed_src"
rm -rf "$SRC" && mkdir -p "$SRC/sub/dir"
printf 'jpeg' >"$SRC/000001.jpg"; printf '3' >"$SRC/000001.cls"
printf '{"label": 4}' >"$SRC/000001.json"; : >"$SRC/empty.jpg"
printf 'x' >"$SRC/sub/dir/$(printf 'n%.0s' {1..140}).png"
for format in gnu pax posix v7 oldgnu; do
  (cd "$SRC" && tar --format="$format" -cf "$SEEDS/$format.tar" . 2>/dev/null) || true
done
(cd "$SRC" && tar --format=ustar -cf "$SEEDS/ustar.tar" 000001.jpg 000001.cls 000001.json empty.jpg)
for f in "$HERE"/tar_regressions/*; do
  [[ -f "$f" && "$(basename "$f")" != README* ]] && cp "$f" "$SEEDS/"
done

fuzz_run "$WORK/tar_index_fuzzer" "$SECONDS_BUDGET" "$WORK/fuzz.log" "$ARTIFACTS" \
  tests/fuzz/tar_regressions/ -- -max_len=65536 "$CORPUS" "$SEEDS"
