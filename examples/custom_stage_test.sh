#!/usr/bin/env bash
# custom_stage_test.sh: runs examples/custom_stage (README "Custom stages") on a dataset
# it makes. The program itself compares, byte for byte, the pipeline with the snippet's
# "invert" stage against the same pipeline without it; this checks it did so on every
# sample and batch.
set -euo pipefail
CUSTOM_STAGE="$1"
FLOWLOADER="$2"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=2 --images_per_class=5 \
  --min_short_side=64 --max_short_side=96 >/dev/null

"$CUSTOM_STAGE" "$DATA" >"$TMP/out.txt" 2>"$TMP/err.txt" \
  || fail "custom_stage exited $?: $(cat "$TMP/err.txt")"
# 10 samples in batches of 4: 3 batches, 10 × 224×224×3 bytes.
want="my_invert ran on 10 samples; 3 batches, 1505280 bytes,"
want+=" every byte 255 - x of the pipeline without it"
grep -qxF "$want" "$TMP/out.txt" || fail "want '$want', got: $(cat "$TMP/out.txt")"
echo PASS
