#!/usr/bin/env bash
# run_fuzz.sh: build the decode+augment libFuzzer target with clang and fuzz for a bounded
# time. Bazel's toolchain is gcc (no libFuzzer), so this compiles the fuzzer and the
# decode/augment/core sources directly with clang++ -fsanitize=fuzzer,address,undefined,
# against Debian's libjpeg-turbo, libpng, libwebp, libtiff, giflib, zlib and Abseil (not
# instrumented: coverage
# feedback comes from our code, the sanitizers check our code's accesses to their memory).
#
#   tests/fuzz/run_fuzz.sh [SECONDS]        default 90 (env FUZZ_SECONDS also works)
#   env: FUZZ_CORPUS=DIR   keep the growing corpus there (default: a fresh temp dir)
#        FUZZ_ARTIFACTS=DIR  where crash/timeout/oom reproducers go
#        FUZZ_WORK=DIR     build directory (default: a temp dir); reused if it exists
#
# Exits non-zero if the build fails, if libFuzzer reports any crash, timeout (-timeout=10)
# or out-of-memory (-rss_limit_mb=2048), or if it ran no inputs. A reproducer is a fuzz
# input (fuzz_body.h: 8-byte header + file bytes): copy it into tests/fuzz/regressions/
# and `bazel test //tests/fuzz:fuzz_regression_test` replays it under gcc (and asan).
# Run from anywhere: sources are found relative to this script's real location.
set -euo pipefail

SECONDS_BUDGET="${1:-${FUZZ_SECONDS:-90}}"
# Under Bazel the script is a runfiles symlink: follow it to the source tree.
HERE="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
TMP_BASE="${TEST_TMPDIR:-${TMPDIR:-/tmp}}"
if [[ -n "${FUZZ_WORK:-}" ]]; then
  WORK="$FUZZ_WORK"
  OWN_WORK=0
else
  WORK="$(mktemp -d "$TMP_BASE/fuzz_work.XXXXXX")"
  OWN_WORK=1
fi
CORPUS="${FUZZ_CORPUS:-$WORK/corpus}"
SEEDS="$WORK/seeds"
ARTIFACTS="${FUZZ_ARTIFACTS:-${TEST_UNDECLARED_OUTPUTS_DIR:-$WORK}/artifacts}"
mkdir -p "$WORK" "$CORPUS" "$SEEDS" "$ARTIFACTS"

CXX="${CXX_FUZZ:-clang++}"
command -v "$CXX" >/dev/null || { echo "run_fuzz.sh: $CXX not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }

# The library sources the body reaches, listed explicitly (stages/core, decode, augment).
LIB_SRCS=(
  stages/core/log.cc
  stages/core/rng.cc
  stages/core/sample_error.cc
  stages/decode/decoder.cc
  stages/decode/internal/bmp_codec.cc
  stages/decode/internal/fast_entropy.cc
  stages/decode/internal/gif_codec.cc
  stages/decode/internal/huffman_scan.cc
  stages/decode/internal/jpeg_codec.cc
  stages/decode/internal/planar_ycc.cc
  stages/decode/internal/pnm_codec.cc
  stages/decode/internal/png_codec.cc
  stages/decode/internal/region_rows.cc
  stages/decode/internal/seek_index_cache.cc
  stages/decode/internal/tiff_codec.cc
  stages/decode/internal/webp_codec.cc
  stages/augment/transform.cc
  stages/augment/internal/crop_math.cc
  stages/augment/internal/resample.cc
  stages/augment/internal/resample_avx2.cc
  stages/augment/internal/resample_avx512.cc
  stages/augment/internal/resample_ycc.cc
  stages/augment/internal/resample_ycc_avx512.cc
  tests/fuzz/fuzz_body.cc
)
# The seed generator needs the same sources plus the encoder and its own main.
SEED_SRCS=(
  "${LIB_SRCS[@]}"
  stages/decode/encoder.cc
  tests/fuzz/seed_corpus.cc
  tests/fuzz/make_seeds.cc
)
ABSL_LIBS=(-labsl_status -labsl_statusor -labsl_cord -labsl_cord_internal
  -labsl_cordz_info -labsl_cordz_handle -labsl_cordz_functions -labsl_str_format_internal
  -labsl_strings -labsl_strings_internal -labsl_synchronization -labsl_time
  -labsl_time_zone -labsl_int128 -labsl_raw_logging_internal -labsl_throw_delegate
  -labsl_base -labsl_spinlock_wait -labsl_malloc_internal -labsl_exponential_biased
  -labsl_stacktrace -labsl_symbolize -labsl_debugging_internal -labsl_demangle_internal
  -labsl_graphcycles_internal -labsl_bad_optional_access -labsl_bad_variant_access
  -labsl_hash -labsl_city -labsl_low_level_hash -labsl_raw_hash_set)
SYS_LIBS=(-ljpeg -lpng16 -lz -lwebp -ltiff -lgif -lpthread)
COMMON=(-std=c++17 -march=x86-64-v2 -g -O1 -I"$ROOT" -fno-omit-frame-pointer)
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)

# Build: one object per source, FUZZ_JOBS (2) at a time; with a reused FUZZ_WORK, an
# object is rebuilt when its source or any header it could include is newer.
NEWEST_HEADER="$(ls -t "$ROOT"/stages/*/*.h "$ROOT"/stages/*/internal/*.h "$ROOT"/tests/fuzz/*.h | head -1)"
# The resampler's kernel files are compiled for their instruction sets, as in
# stages/augment/BUILD (copts of :resample_avx2 and :resample_avx512).
isa_flags() {  # src
  case "$1" in
    */resample_avx2.cc) echo "-mavx2 -ffp-contract=off" ;;
    */resample_avx512.cc | */resample_ycc_avx512.cc)
      echo "-mavx2 -mavx512f -mavx512bw -ffp-contract=off" ;;
  esac
}
compile() {  # out src flags...
  local out="$1" src="$2"; shift 2
  if [[ ! -f "$out" || "$ROOT/$src" -nt "$out" || "$NEWEST_HEADER" -nt "$out" ]]; then
    # shellcheck disable=SC2046  # isa_flags prints separate words on purpose.
    "$CXX" "${COMMON[@]}" "$@" $(isa_flags "$src") -c "$ROOT/$src" -o "$out"
  fi
}
build() {  # dir flags... -- srcs...
  local dir="$1"; shift
  local flags=()
  while [[ "$1" != "--" ]]; do flags+=("$1"); shift; done
  shift
  mkdir -p "$dir"
  local pids=() objs=() i=0
  for src in "$@"; do
    local obj="$dir/$(echo "$src" | tr / _).o"
    objs+=("$obj")
    compile "$obj" "$src" "${flags[@]}" &
    pids+=($!)
    if (( ++i % ${FUZZ_JOBS:-2} == 0 )); then
      for p in "${pids[@]}"; do wait "$p"; done
      pids=()
    fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  OBJS=("${objs[@]}")
}

t0=$(date +%s)
# The fuzzer: sanitizers plus libFuzzer's coverage instrumentation on our sources.
build "$WORK/obj_fuzz" "${SAN[@]}" -fsanitize=fuzzer-no-link -- "${LIB_SRCS[@]}" tests/fuzz/decode_augment_fuzzer.cc
"$CXX" "${SAN[@]}" -fsanitize=fuzzer "${OBJS[@]}" -o "$WORK/decode_augment_fuzzer" \
  "${ABSL_LIBS[@]}" "${SYS_LIBS[@]}"
# The seed writer (also sanitized: it runs the encoders).
build "$WORK/obj_seed" "${SAN[@]}" -- "${SEED_SRCS[@]}"
"$CXX" "${SAN[@]}" "${OBJS[@]}" -o "$WORK/make_seeds" "${ABSL_LIBS[@]}" "${SYS_LIBS[@]}"
echo "run_fuzz.sh: built in $(( $(date +%s) - t0 )) s"

rm -f "$SEEDS"/*
ASAN_OPTIONS=detect_leaks=1 "$WORK/make_seeds" "$SEEDS"
# WebP/TIFF/GIF/BMP/PPM seeds, good and broken, made by PIL (Debian's python3-pil).
FORMAT_SEEDS="$WORK/format_seeds"
rm -rf "$FORMAT_SEEDS"
/usr/bin/python3 "$ROOT/stages/decode/testdata/make_format_fixtures.py" "$FORMAT_SEEDS" --fuzz_seeds
rm -f "$FORMAT_SEEDS/manifest.tsv"

# Replay the checked-in regressions first (each must pass), then fuzz.
REGRESSIONS=()
for f in "$HERE"/regressions/*; do
  [[ -f "$f" && "$(basename "$f")" != README* ]] && REGRESSIONS+=("$f")
done
if (( ${#REGRESSIONS[@]} > 0 )); then
  "$WORK/decode_augment_fuzzer" -runs=0 "${REGRESSIONS[@]}" >"$WORK/regressions.log" 2>&1 || {
    cat "$WORK/regressions.log" >&2
    echo "run_fuzz.sh: FAIL: a checked-in regression input crashes" >&2
    exit 1
  }
fi

LOG="$WORK/fuzz.log"
set +e
ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
"$WORK/decode_augment_fuzzer" \
  -max_total_time="$SECONDS_BUDGET" -rss_limit_mb=2048 -timeout=10 \
  -max_len=262144 -print_final_stats=1 -dict="$HERE/jpeg_png.dict" \
  -artifact_prefix="$ARTIFACTS/" "$CORPUS" "$SEEDS" "$FORMAT_SEEDS" >"$LOG" 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$LOG" | tail -1)
peak=$(sed -n 's/^stat::peak_rss_mb: *//p' "$LOG" | tail -1)
cov=$(grep -o 'cov: [0-9]*' "$LOG" | tail -1 || true)
echo "run_fuzz.sh: ${SECONDS_BUDGET} s, rc=$rc, executions=${execs:-?}, exec/s=${rate:-?}, peak_rss_mb=${peak:-?}, ${cov:-cov: ?}, corpus=$(ls "$CORPUS" | wc -l) files"
if (( rc != 0 )); then
  tail -n 60 "$LOG" >&2
  echo "run_fuzz.sh: FAIL: libFuzzer exited $rc; reproducers in $ARTIFACTS:" >&2
  ls -l "$ARTIFACTS" >&2
  echo "copy one into tests/fuzz/regressions/ to keep it as a regression test" >&2
  exit 1
fi
if [[ -z "$execs" || "$execs" -lt 1000 ]]; then
  tail -n 30 "$LOG" >&2
  echo "run_fuzz.sh: FAIL: only ${execs:-0} executions (expected thousands)" >&2
  exit 1
fi
echo "run_fuzz.sh: PASS"
if (( OWN_WORK )) && [[ -z "${FUZZ_CORPUS:-}" && -z "${FUZZ_ARTIFACTS:-}" ]]; then
  rm -rf "$WORK"  # Nothing to keep: no crash, and the corpus was a temporary one.
fi
