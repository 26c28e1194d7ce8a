#!/usr/bin/env bash
# plan_cli_test.sh: `flowloader plan` prints what a run with the same flags would hold:
# one line per part with its size and formula, then the total against what is available;
# --json the same as one object; exit 2 with one line for invalid options, a flag of
# another command (--out), or a plan that does not fit (the plan still printed).
set -euo pipefail
FLOWLOADER="$1"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=3 --images_per_class=10 \
  --min_short_side=64 --max_short_side=128 >/dev/null

# 1. The text table: a line per part with its formula, then the total.
"$FLOWLOADER" plan --data="$DATA" --batch_size=8 --image_size=64 --num_workers=2 \
  --prefetch_batches=3 >"$TMP/plan.txt" 2>"$TMP/plan.err" || fail "plan exited $?: $(cat "$TMP/plan.err")"
grep -qE '^  batch pool +1\.1 MiB  prefetch 3 × batch 8 × 3×64² float32$' "$TMP/plan.txt" ||
  fail "no batch pool line: $(cat "$TMP/plan.txt")"
grep -qE '^  seek index +240\.0 KiB  30 files × 8\.0 KiB, within decode seek_index_mb 256$' "$TMP/plan.txt" ||
  fail "no seek index line: $(cat "$TMP/plan.txt")"
grep -qE '^  decode scratch +96\.0 KiB  num_workers 2 × 48\.0 KiB decoded pixels$' "$TMP/plan.txt" ||
  fail "no decode scratch line: $(cat "$TMP/plan.txt")"
grep -qE '^  codec memory +16\.0 MiB  num_workers 2 × decode max_decode_mb 8 \(progressive JPEG coefficients, lossless WebP ARGB\)$' "$TMP/plan.txt" ||
  fail "no codec memory line: $(cat "$TMP/plan.txt")"
grep -qE '^  decode buffers +4\.0 MiB  num_workers 2 × 2\.0 MiB kept by a thread \(file bytes up to 1\.0 MiB, JPEG scan copy up to 1\.0 MiB\)$' "$TMP/plan.txt" ||
  fail "no decode buffers line: $(cat "$TMP/plan.txt")"
grep -qE '^  total +21\.5 MiB  of .* available \(.*\): fits$' "$TMP/plan.txt" ||
  fail "no total line: $(cat "$TMP/plan.txt")"
! grep -q "device batches" "$TMP/plan.txt" || fail "a device part without a device"

# 2. --json: the same parts, in bytes; a spec's values and overriding flags apply.
printf 'batch_size: 4\nprefetch_batches: 2\n' >"$TMP/spec.yaml"
"$FLOWLOADER" plan --spec="$TMP/spec.yaml" --data="$DATA" --prefetch_batches=5 \
  --image_size=64 --json >"$TMP/plan.json" 2>"$TMP/json.err" ||
  fail "plan --json exited $?: $(cat "$TMP/json.err")"
"$PY" - "$TMP/plan.json" <<'PYEOF'
import json, sys
text = open(sys.argv[1]).read()
assert text.count("\n") == 1, "not one line: %r" % text
p = json.loads(text)
items = p["items"]
assert list(items) == ["batch_pool", "batch_labels", "seek_index", "decode_codec",
                       "decode_kept", "decode_scratch"], list(items)
pool = items["batch_pool"]
assert pool == {"bytes": 5 * 4 * 3 * 64 * 64 * 4,
                "formula": "prefetch 5 × batch 4 × 3×64² float32",
                "pinned": False, "device": False}, pool
assert items["batch_labels"] == {"bytes": 5 * 4 * 8,  # The int64 labels in each buffer.
                                 "formula": "prefetch 5 × batch 4 × int64 label",
                                 "pinned": False, "device": False}, items["batch_labels"]
assert items["seek_index"]["bytes"] == 30 * 8 << 10, items["seek_index"]  # 30 files.
assert p["total_bytes"] == sum(i["bytes"] for i in items.values()), p
assert p["available_bytes"] > 0 and p["available_source"], p
assert p["device_bytes"] == 0 and p["fits"] is True, p
PYEOF

# 3. A plan that does not fit: printed anyway, then Create's refusal, exit 2.
set +e
"$FLOWLOADER" plan --data="$DATA" --image_size=2048 --memory_limit_mb=100 --prefetch_batches=3 --json \
  >"$TMP/big.json" 2>"$TMP/big.err"
rc=$?
set -e
[[ $rc -eq 2 ]] || fail "a plan over the limit exited $rc, want 2"
want="flowloader: the batch pool needs 4.2 GiB (prefetch 3 × batch 30 (an epoch's samples; batch_size 64) × 3×2048² float32) but 52.0 MiB is available (memory_limit_mb 100.0 MiB less 48.0 MiB the process holds itself): lower batch_size, image_size or prefetch_batches"
grep -qxF "$want" "$TMP/big.err" || fail "no refusal line: $(cat "$TMP/big.err")"
"$PY" -c "import json,sys; p=json.load(open(sys.argv[1])); assert p['fits'] is False and p['available_bytes'] == (100 - 48) << 20, p" \
  "$TMP/big.json" || fail "the refused plan was not printed: $(cat "$TMP/big.json")"

# 4. Invalid options: exit 2, one line, nothing on stdout.
expect_refused() {
  local want="$1"; shift
  set +e
  "$FLOWLOADER" plan "$@" >"$TMP/o" 2>"$TMP/e"
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "plan $* exited $rc, want 2"
  grep -q -- "$want" "$TMP/e" || fail "plan $*: expected '$want' in: $(cat "$TMP/e")"
  [[ $(grep -c . "$TMP/e") -eq 1 ]] || fail "plan $*: more than one line: $(cat "$TMP/e")"
  [[ ! -s "$TMP/o" ]] || fail "plan $* printed a plan: $(cat "$TMP/o")"
}
expect_refused "^flowloader: --out is a flag of flowloader [a-z-]*, not of flowloader plan$" \
  --data="$DATA" --out="$TMP/x"
expect_refused "^flowloader: --summary_json is a flag of flowloader run, not of flowloader plan$" \
  --data="$DATA" --summary_json="$TMP/s.json"
expect_refused "^flowloader: --batch_size must be >= 1, got 0$" --data="$DATA" --batch_size=0
expect_refused "^flowloader: an epoch has no batch: 30 samples on this rank, batch_size 100 with drop_last$" \
  --data="$DATA" --batch_size=100 --drop_last
expect_refused "^flowloader: --json must be true or false, got 'maybe'$" --data="$DATA" --json=maybe
expect_refused "not found" --data="$TMP/no_such_dir"
expect_refused "^flowloader: --data is required" --batch_size=4

# 5. plan --help lists run's pipeline flags and --json, not run's own.
"$FLOWLOADER" plan --help >"$TMP/help.txt"
grep -q -- "--batch_size=64 " "$TMP/help.txt" && grep -q -- "--json=false " "$TMP/help.txt" ||
  fail "plan --help: $(cat "$TMP/help.txt")"
! grep -q -- "--summary_json" "$TMP/help.txt" || fail "plan --help lists run's own flags"

echo "plan_cli_test: 1 passed, 0 failed"
