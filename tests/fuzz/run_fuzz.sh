#!/usr/bin/env bash
# run_fuzz.sh: build the decode+augment libFuzzer target with clang
# (-fsanitize=fuzzer,address,undefined; fuzz_common.sh says how) against Debian's
# libjpeg-turbo, libpng, libwebp, libtiff, giflib, zlib and Abseil, and fuzz for a bounded
# time.
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
FUZZ_NAME=run_fuzz.sh
# shellcheck source=tests/fuzz/fuzz_common.sh
source "$HERE/fuzz_common.sh"

# The library sources the body reaches, listed explicitly (stages/core, decode, augment).
LIB_SRCS=(
  stages/core/cpu.cc
  stages/core/log.cc
  stages/core/one_line.cc
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
  stages/augment/internal/pillow_avx2.cc
  stages/augment/internal/pillow_busd.cc
  stages/augment/internal/pillow_vnni.cc
  stages/augment/internal/pillow_resample.cc
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
SYS_LIBS=(-ljpeg -lpng16 -lz -lwebp -ltiff -lgif -lpthread)

t0=$(date +%s)
# The fuzzer: sanitizers plus libFuzzer's coverage instrumentation on our sources.
fuzz_build "$WORK/obj_fuzz" "${FUZZ_SAN[@]}" -fsanitize=fuzzer-no-link -- "${LIB_SRCS[@]}" tests/fuzz/decode_augment_fuzzer.cc
"$CXX" "${FUZZ_SAN[@]}" -fsanitize=fuzzer "${OBJS[@]}" -o "$WORK/decode_augment_fuzzer" \
  "${FUZZ_ABSL_LIBS[@]}" "${SYS_LIBS[@]}"
# The seed writer (also sanitized: it runs the encoders).
fuzz_build "$WORK/obj_seed" "${FUZZ_SAN[@]}" -- "${SEED_SRCS[@]}"
"$CXX" "${FUZZ_SAN[@]}" "${OBJS[@]}" -o "$WORK/make_seeds" "${FUZZ_ABSL_LIBS[@]}" "${SYS_LIBS[@]}"
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

fuzz_run "$WORK/decode_augment_fuzzer" "$SECONDS_BUDGET" "$WORK/fuzz.log" "$ARTIFACTS" \
  tests/fuzz/regressions/ -- -max_len=262144 -dict="$HERE/jpeg_png.dict" \
  "$CORPUS" "$SEEDS" "$FORMAT_SEEDS"
echo "$FUZZ_NAME: corpus=$(ls "$CORPUS" | wc -l) files"
if (( OWN_WORK )) && [[ -z "${FUZZ_CORPUS:-}" && -z "${FUZZ_ARTIFACTS:-}" ]]; then
  rm -rf "$WORK"  # Nothing to keep: no crash, and the corpus was a temporary one.
fi
