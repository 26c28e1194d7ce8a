#!/usr/bin/env bash
# run_tar_fuzz.sh: build the tar-index libFuzzer target (tar_fuzz_body.h) with clang and
# fuzz it for a bounded time; its share of CI's 90 s fuzz budget (run_fuzz.sh has the
# rest). Seeds are archives GNU tar writes here (ustar, GNU long names, pax, members in
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
mkdir -p "$WORK/obj" "$CORPUS" "$SEEDS" "$ARTIFACTS"

CXX="${CXX_FUZZ:-clang++}"
command -v "$CXX" >/dev/null || { echo "run_tar_fuzz.sh: $CXX not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }

SRCS=(
  stages/core/log.cc
  stages/core/sample_error.cc
  stages/reader/tar_index.cc
  stages/reader/internal/shard_names.cc
  tests/fuzz/tar_fuzz_body.cc
  tests/fuzz/tar_index_fuzzer.cc
)
ABSL_LIBS=(-labsl_status -labsl_statusor -labsl_cord -labsl_cord_internal
  -labsl_cordz_info -labsl_cordz_handle -labsl_cordz_functions -labsl_str_format_internal
  -labsl_strings -labsl_strings_internal -labsl_synchronization -labsl_time
  -labsl_time_zone -labsl_int128 -labsl_raw_logging_internal -labsl_throw_delegate
  -labsl_base -labsl_spinlock_wait -labsl_malloc_internal -labsl_exponential_biased
  -labsl_stacktrace -labsl_symbolize -labsl_debugging_internal -labsl_demangle_internal
  -labsl_graphcycles_internal -labsl_bad_optional_access -labsl_bad_variant_access)
FLAGS=(-std=c++17 -g -O1 -I"$ROOT" -fno-omit-frame-pointer
  -fsanitize=address,undefined -fno-sanitize-recover=undefined)

t0=$(date +%s)
OBJS=()
for src in "${SRCS[@]}"; do
  obj="$WORK/obj/$(echo "$src" | tr / _).o"
  OBJS+=("$obj")
  if [[ ! -f "$obj" || "$ROOT/$src" -nt "$obj" ]]; then
    "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer-no-link -c "$ROOT/$src" -o "$obj"
  fi
done
"$CXX" "${FLAGS[@]}" -fsanitize=fuzzer "${OBJS[@]}" -o "$WORK/tar_index_fuzzer" "${ABSL_LIBS[@]}" -lpthread
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

LOG="$WORK/fuzz.log"
set +e
ASAN_OPTIONS="detect_leaks=1" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
"$WORK/tar_index_fuzzer" -max_total_time="$SECONDS_BUDGET" -rss_limit_mb=2048 -timeout=10 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$ARTIFACTS/" "$CORPUS" "$SEEDS" >"$LOG" 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)
cov=$(grep -o 'cov: [0-9]*' "$LOG" | tail -1 || true)
echo "run_tar_fuzz.sh: ${SECONDS_BUDGET} s, rc=$rc, executions=${execs:-?}, ${cov:-cov: ?}, corpus=$(ls "$CORPUS" | wc -l) files"
if (( rc != 0 )); then
  tail -n 40 "$LOG" >&2
  echo "run_tar_fuzz.sh: FAIL: libFuzzer exited $rc; reproducers in $ARTIFACTS" >&2
  exit 1
fi
if [[ -z "$execs" || "$execs" -lt 1000 ]]; then
  echo "run_tar_fuzz.sh: FAIL: only ${execs:-0} executions" >&2
  exit 1
fi
echo "run_tar_fuzz.sh: PASS"
