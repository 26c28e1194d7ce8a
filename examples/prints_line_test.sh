#!/usr/bin/env bash
# prints_line_test.sh PROGRAM FLOWLOADER WANT: runs an example program (the docs' custom
# stage, GraphBuilder and several-views snippets) on a dataset made here, 10 samples of 2
# classes, and passes when it exits 0 having printed the line WANT. The programs check the
# data themselves (byte for byte against a second pipeline, or view against view); the
# line says they did so on every batch and sample.
set -euo pipefail
PROGRAM="$1"
FLOWLOADER="$2"
WANT="$3"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=2 --images_per_class=5 \
  --min_short_side=64 --max_short_side=96 >/dev/null

"$PROGRAM" "$DATA" >"$TMP/out.txt" 2>"$TMP/err.txt" \
  || fail "$(basename "$PROGRAM") exited $?: $(cat "$TMP/err.txt")"
grep -qxF "$WANT" "$TMP/out.txt" || fail "want '$WANT', got: $(cat "$TMP/out.txt")"
echo PASS
