#!/usr/bin/env bash
# graph_builder_test.sh: runs examples/graph_builder (README "Graphs in C++") on a dataset
# it makes. The program compares, byte for byte, the pipeline GraphBuilder built (fields
# bound to `pixels` and `view0`) with the built-in one on the same seed; this checks it
# did so on every batch.
set -euo pipefail
GRAPH_BUILDER="$1"
FLOWLOADER="$2"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=2 --images_per_class=5 \
  --min_short_side=64 --max_short_side=96 >/dev/null

"$GRAPH_BUILDER" "$DATA" >"$TMP/out.txt" 2>"$TMP/err.txt" \
  || fail "graph_builder exited $?: $(cat "$TMP/err.txt")"
# 10 samples in batches of 4: 3 batches, 10 × 96×96×3 bytes.
want="3 batches, 276480 bytes, the same as the built-in graph's"
grep -qxF "$want" "$TMP/out.txt" || fail "want '$want', got: $(cat "$TMP/out.txt")"
echo PASS
