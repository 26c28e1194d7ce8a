#!/usr/bin/env bash
# memory_plan_cli_test.sh: `flowloader run` checks its memory plan before allocating:
# a batch_size far above the dataset runs with the epoch's rows, and a plan above the
# memory limit exits 2 with one line naming the bytes and the knobs.
set -euo pipefail
FLOWLOADER="$1"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=3 --images_per_class=10 \
  --min_short_side=64 --max_short_side=128 >/dev/null

# 1. batch_size 100000 over 30 images: one batch of 30, a pool of 3 × 30 rows (a fixed
# pool: prefetch_batches auto would start at 2 buffers and grow).
"$FLOWLOADER" run --data="$DATA" --batch_size=100000 --image_size=64 --prefetch_batches=3 \
  --metrics_address= \
  --progress=false --summary_json="$TMP/summary.json" >"$TMP/out.txt" 2>"$TMP/err.txt" \
  || fail "batch_size=100000 exited $?: $(cat "$TMP/err.txt")"
/usr/bin/python3 - "$TMP/summary.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["samples"] == 30 and s["batches"] == 1, s
plan = s["memory_plan"]
assert plan["batch_pool_bytes"] == 3 * 30 * 3 * 64 * 64 * 4, plan
assert plan["total_bytes"] >= plan["batch_pool_bytes"], plan
PYEOF

# 2. Above a memory limit: exit 2 with one line naming the bytes and the knobs.
set +e
"$FLOWLOADER" run --data="$DATA" --batch_size=100000 --image_size=512 --memory_limit_mb=100 \
  --prefetch_batches=3 --metrics_address= --progress=false >"$TMP/out2.txt" 2>"$TMP/err2.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "expected exit 2 above the limit, got $rc: $(cat "$TMP/err2.txt")"
want="flowloader: the batch pool needs 270.0 MiB (prefetch 3 × batch 30 (an epoch's samples; batch_size 100000) × 3×512² float32) but 52.0 MiB is available (memory_limit_mb 100.0 MiB less 48.0 MiB the process holds itself): lower batch_size, image_size or prefetch_batches"
grep -qxF "$want" "$TMP/err2.txt" || fail "no one-line refusal; stderr was: $(cat "$TMP/err2.txt")"
[[ $(grep -c "batch pool" "$TMP/err2.txt") -eq 1 ]] || fail "refusal not on one line"
[[ ! -s "$TMP/out2.txt" ]] || fail "a refused run printed a report: $(cat "$TMP/out2.txt")"

# 3. The same limit from a spec; a flag given on the command line overrides it.
printf 'memory_limit_mb: 100\n' >"$TMP/limit.yaml"
set +e
"$FLOWLOADER" run --spec="$TMP/limit.yaml" --data="$DATA" --batch_size=100000 --image_size=512 \
  --metrics_address= --progress=false >/dev/null 2>"$TMP/err3.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] && grep -qF "52.0 MiB is available (memory_limit_mb 100.0 MiB less 48.0 MiB" "$TMP/err3.txt" \
  || fail "spec memory_limit_mb: rc $rc, $(cat "$TMP/err3.txt")"
"$FLOWLOADER" run --spec="$TMP/limit.yaml" --memory_limit_mb=0 --data="$DATA" \
  --batch_size=100000 --image_size=512 --metrics_address= --progress=false >/dev/null \
  2>"$TMP/err4.txt" || fail "--memory_limit_mb=0 did not override the spec: $(cat "$TMP/err4.txt")"

# 4. A negative limit is a one-line error naming the flag.
set +e
"$FLOWLOADER" run --data="$DATA" --memory_limit_mb=-5 --metrics_address= --progress=false \
  >/dev/null 2>"$TMP/err5.txt"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "--memory_limit_mb=-5: expected exit 2, got $rc"
grep -q "memory_limit_mb" "$TMP/err5.txt" || fail "error does not name the flag: $(cat "$TMP/err5.txt")"
echo PASS
