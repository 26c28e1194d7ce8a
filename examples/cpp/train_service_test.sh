#!/usr/bin/env bash
# train_service_test.sh: runs examples/cpp/train_service for 40 steps on a dataset it
# makes; while it trains, /metrics must serve the pipeline's counters; at the end it must
# report the steps it trained and a finite loss.
set -euo pipefail
SERVICE="$1"
FLOWLOADER="$2"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
# libtorch (not built with ASan) keeps its operator registries until exit: not our leak.
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"

"$FLOWLOADER" make-dataset --out="$TMP/data" --classes=4 --images_per_class=16 \
  --min_short_side=48 --max_short_side=64 >/dev/null
"$SERVICE" "$TMP/data" 40 127.0.0.1:0 >"$TMP/out.txt" 2>"$TMP/err.txt" &
pid=$!
for _ in $(seq 1 600); do
  grep -q "^metrics at " "$TMP/out.txt" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
url=$(sed -n 's/^metrics at //p' "$TMP/out.txt")
[ -n "$url" ] || fail "no metrics line: $(cat "$TMP/out.txt" "$TMP/err.txt")"
scraped=0
while kill -0 "$pid" 2>/dev/null; do
  if curl -sf "$url" >"$TMP/metrics.txt" 2>/dev/null &&
     grep -q '^flowloader_batches_total{.*pipeline="train_service"' "$TMP/metrics.txt"; then
    scraped=1
    break
  fi
  sleep 0.05
done
wait "$pid" || fail "train_service exited $?: $(cat "$TMP/err.txt")"
[ "$scraped" -eq 1 ] || fail "never scraped the pipeline's metrics while it trained"
grep -Eq '^trained 40 steps in [0-9.]+ s: [0-9]+ images/s, final loss [0-9]+\.[0-9]+' \
  "$TMP/out.txt" || fail "no summary line: $(cat "$TMP/out.txt")"
grep -q '^step 40 loss ' "$TMP/out.txt" || fail "no step lines: $(cat "$TMP/out.txt")"
echo PASS
