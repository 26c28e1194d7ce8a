#!/usr/bin/env bash
# plan_limit_rss_test.sh: a configuration whose memory plan fills memory_limit_mb stays
# within it, as the whole process: the plan fits the limit less the 48 MiB the process
# holds itself (its code, libraries, thread stacks; kUnplannedBytes), so prefetch_batches
# shrinks before the run starts.
#   1. one worker, batch_size chosen so that two batch buffers and the rest of the plan
#      fill 256 MiB to the last MiB: it ran with both buffers and peaked at 267 MiB (524
#      at 512, 1037 at 1024); now prefetch_batches is cut to 1 (logged) and the run stays
#      within 256.
#   2. the same batch with prefetch_batches 1 already: refused at Create, in one line
#      naming the limit, what the process holds and batch_size (exit 2).
# Sanitized builds map shadow memory: there RSS says nothing, only the refusal is checked.
source tests/testing/cli_test_lib.sh "$@"
LIMIT_MB=256

# 600 noisy 500x375 photos: rows for a batch of ~200 (602112 bytes a 3×224² float32 row).
"$PY" - "$TMP/data" <<'PYEOF'
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
rng = np.random.default_rng(0)
for c in range(2):
    os.makedirs(f"{root}/c{c}", exist_ok=True)
for i in range(600):
    a = rng.integers(0, 255, size=(375, 500, 3), dtype=np.uint8)
    Image.fromarray(a).save(f"{root}/c{i % 2}/{i}.jpg", quality=80)
PYEOF

FLAGS=(--data="$TMP/data" --num_workers=1 --metrics_address= --noprogress)
# The plan as given (no limit) for a batch of 1 and of 2: its fixed part and its bytes a row.
plan_total() {
  "$FLOWLOADER" plan "${FLAGS[@]:0:2}" --batch_size="$1" --prefetch_batches="$2" --json \
    | "$PY" -c "import json,sys; print(json.load(sys.stdin)['total_bytes'])"
}
one=$(plan_total 1 2)
two=$(plan_total 2 2)
BATCH=$("$PY" -c "
row = $two - $one
print(($LIMIT_MB * 2**20 - ($one - row)) // row)")
total=$(plan_total "$BATCH" 2)
"$PY" -c "assert $LIMIT_MB * 2**20 - 2**20 < $total <= $LIMIT_MB * 2**20, ($total, $BATCH)" \
  || fail "batch $BATCH does not fill the limit: plan $total bytes"

# 1. Two buffers fill the limit: one is cut.
/usr/bin/time -v "$FLOWLOADER" run "${FLAGS[@]}" --batch_size="$BATCH" --prefetch_batches=2 \
  --epochs=2 --memory_limit_mb="$LIMIT_MB" >"$TMP/run.out" 2>"$TMP/run.err" \
  || fail "batch $BATCH under memory_limit_mb $LIMIT_MB exited $?: $(tail -3 "$TMP/run.err")"
peak_kb=$(sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\)/\1/p' "$TMP/run.err")
echo "plan_limit_rss_test: batch $BATCH, plan $((total >> 20)) MiB as given, peak RSS $((peak_kb / 1024)) MiB (limit $LIMIT_MB)"
if [[ $SANITIZED -eq 0 && $peak_kb -gt $((LIMIT_MB * 1024)) ]]; then
  fail "peak RSS $((peak_kb / 1024)) MiB over memory_limit_mb $LIMIT_MB"
fi
grep -q "prefetch_batches cut from 2 to 1" "$TMP/run.err" \
  || fail "prefetch_batches was not cut: $(grep -v '^\s' "$TMP/run.err" | head -5)"

# 2. Nothing optional left to cut: refused in one line.
set +e
"$FLOWLOADER" run "${FLAGS[@]}" --batch_size="$BATCH" --prefetch_batches=1 --epochs=1 \
  --memory_limit_mb=$((LIMIT_MB / 2 + 24)) >"$TMP/no.out" 2>"$TMP/no.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "a batch over the limit less the process's part exited $rc, want 2"
line=$(grep -v " I " "$TMP/no.err")
[[ $(grep -c . <<<"$line") -eq 1 ]] || fail "not one line: $line"
for want in "less 48.0 MiB the process holds itself" "batch_size"; do
  grep -qF "$want" <<<"$line" || fail "the refusal does not name '$want': $line"
done
echo "plan_limit_rss_test: 2 passed, 0 failed"
