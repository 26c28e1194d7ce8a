#!/usr/bin/env bash
# sample_room_rss_test.sh: under memory_limit_mb each worker may hold 32 MiB for one
# sample however full the plan (kMinWorkerImageBytes, so that ordinary photos are not
# skipped); that minimum is a plan part ("sample room"), so a plan that fills the limit
# less the process's 48 MiB can no longer take the run past it by 32 MiB a worker: the
# seek index and prefetch_batches shrink first, then the room itself (larger samples are
# then skipped, counted), never the limit.
# Images are 1850x1850 photos whose whole decode and the op list's copy just fit 32 MiB
# (random_invert first: no planned crop, a whole decode), then center_crop or resize to
# 1024x1024 uint8 (3 MiB a batch row).
#   1. 2 workers, memory_limit_mb 256, prefetch_batches 2 and the batch that fills the
#      limit with the plan made without the sample room: it ran with both buffers and
#      peaked at 273 MiB; now prefetch_batches is cut to 1 (logged) and the run stays
#      within 256, every sample delivered.
#   2. 4 workers, memory_limit_mb 128, prefetch_batches 1, a batch that fills the plan
#      without the room: it ran at 180 MiB; now the room is cut to what is left (logged,
#      naming memory_limit_mb and num_workers), the photos that need more than a worker's
#      share are skipped as decode_memory, counted, and the run stays within 128.
#   3. num_workers auto (cpu_budget 4) under memory_limit_mb 256, prefetch_batches auto,
#      the batch that fills the limit with 4 workers and no room: it ran 4 workers at 290
#      MiB; now auto takes the most workers whose plan fits (logged) and the run stays
#      within 256.
# Sanitized builds map shadow memory: there RSS says nothing, only exits and lines count.
source tests/testing/cli_test_lib.sh "$@"

# 12 distinct photos, listed 96 times (symlinks): rows for batches of up to 96.
"$PY" - "$TMP/data" <<'PYEOF'
import os, sys
import numpy as np
from PIL import Image
root = sys.argv[1]
os.makedirs(f"{root}/photos", exist_ok=True)
os.makedirs(f"{root}/set/c", exist_ok=True)
w = h = 1850
for i in range(12):
    x = (np.arange(w, dtype=np.uint16) % 256).astype(np.uint8)
    a = np.broadcast_to(np.stack([x, x[::-1], (x * 3) % 251], axis=-1), (h, w, 3)).copy()
    a[::97] = 255
    a[:, ::61] = (i * 37) % 256
    Image.fromarray(a).save(f"{root}/photos/{i}.jpg", quality=85)
for i in range(96):
    os.symlink(f"{root}/photos/{i % 12}.jpg", f"{root}/set/c/{i}.jpg")
PYEOF

spec() {  # spec FILE WORKERS PREFETCH BATCH LIMIT LAST_OP [EXTRA]
  {
    echo "data: $TMP/data/set"
    echo "num_workers: $2"
    echo "prefetch_batches: $3"
    echo "batch_size: $4"
    echo "memory_limit_mb: $5"
    echo "epochs: 1"
    [[ -n "${7:-}" ]] && echo "$7"
    echo "stages:"
    echo "  - type: read"
    echo "  - type: decode"
    echo "  - type: transforms"
    echo "    ops:"
    echo "      - random_invert: {p: 1.0}"
    echo "      - $6"
  } >"$1"
}
# fill_batch WORKERS PREFETCH LIMIT LAST_OP: the batch whose plan, made without a limit
# (no sample room), fills LIMIT less 48 MiB.
fill_batch() {
  local one two
  spec "$TMP/f.yaml" "$1" "$2" 1 "$3" "$4"
  one=$("$FLOWLOADER" plan --spec="$TMP/f.yaml" --memory_limit_mb=0 --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['total_bytes'])")
  spec "$TMP/f.yaml" "$1" "$2" 2 "$3" "$4"
  two=$("$FLOWLOADER" plan --spec="$TMP/f.yaml" --memory_limit_mb=0 --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['total_bytes'])")
  "$PY" -c "row = $two - $one; print((($3 - 48) * 2**20 - ($one - row)) // row)"
}
peak_mb() { echo $(($(sed -n 's/.*Maximum resident set size (kbytes): \([0-9]*\)/\1/p' "$1") / 1024)); }
samples() { "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['samples'])" "$1"; }
check_peak() {  # check_peak NAME TIMELOG LIMIT
  local peak; peak=$(peak_mb "$2")
  echo "sample_room_rss_test: $1: peak RSS $peak MiB (limit $3)"
  if [[ $SANITIZED -eq 0 && $peak -gt $3 ]]; then fail "$1: peak RSS $peak MiB over memory_limit_mb $3"; fi
}
RUN=(--metrics_address= --noprogress)

# 1. Two buffers fill 256 MiB without the room: one is cut, the run stays within 256.
B=$(fill_batch 2 2 256 "resize: {size: [1024, 1024]}")
spec "$TMP/one.yaml" 2 2 "$B" 256 "resize: {size: [1024, 1024]}"
/usr/bin/time -v "$FLOWLOADER" run --spec="$TMP/one.yaml" "${RUN[@]}" \
  --summary_json="$TMP/one.json" >"$TMP/one.out" 2>"$TMP/one.err" \
  || fail "case 1 (batch $B) exited $?: $(grep -v '^\s' "$TMP/one.err" | tail -3)"
check_peak "2 workers, batch $B, prefetch 2" "$TMP/one.err" 256
grep -q "prefetch_batches cut from 2 to 1" "$TMP/one.err" \
  || fail "case 1: prefetch_batches was not cut: $(grep -v '^\s' "$TMP/one.err" | head -5)"
[[ $(samples "$TMP/one.json") -eq 96 ]] || fail "case 1: not every sample: $(cat "$TMP/one.json")"

# 2. Four workers' room does not fit 128 MiB beside a batch that fills it: the room is
# cut (after the seek index and prefetch), logged, and the photos that no longer fit a
# worker's share are skipped and counted, the run within 128.
B=$(fill_batch 4 1 128 "center_crop: {size: 1024}")
[[ $B -ge 1 ]] || fail "case 2: no batch fills the plan ($B)"
spec "$TMP/two.yaml" 4 1 "$B" 128 "center_crop: {size: 1024}"
set +e
/usr/bin/time -v "$FLOWLOADER" run --spec="$TMP/two.yaml" "${RUN[@]}" \
  --summary_json="$TMP/two.json" >"$TMP/two.out" 2>"$TMP/two.err"
rc=$?
set -e
check_peak "4 workers, batch $B" "$TMP/two.err" 128
# Exit 3: no sample delivered (each is skipped, as expected where none fits).
[[ $rc -eq 0 || $rc -eq 3 ]] || fail "case 2 (batch $B) exited $rc: $(grep -v '^\s' "$TMP/two.err" | tail -3)"
line=$(grep "sample room" "$TMP/two.err" | head -1)
for want in "sample room (32 MiB a worker less its planned decode memory) cut to" \
            "raise memory_limit_mb or lower num_workers"; do
  grep -qF "$want" <<<"$line" || fail "case 2: the log does not say '$want': $line"
done
"$PY" - "$TMP/two.json" <<'PYEOF' || fail "case 2: a sample neither delivered nor counted"
import json, sys
s = json.load(open(sys.argv[1]))
errors = s.get("errors", {})
assert s["samples"] + errors.get("decode_memory", 0) + errors.get("op_memory", 0) == 96, s
PYEOF

# 3. num_workers auto under 256 MiB, a batch that fills the limit with 4 workers and no
# room: the most workers that fit, within the limit.
B=$(fill_batch 4 1 256 "center_crop: {size: 1024}")
spec "$TMP/auto.yaml" auto auto "$B" 256 "center_crop: {size: 1024}" "cpu_budget: 4"
/usr/bin/time -v "$FLOWLOADER" run --spec="$TMP/auto.yaml" "${RUN[@]}" \
  --summary_json="$TMP/auto.json" >"$TMP/auto.out" 2>"$TMP/auto.err" \
  || fail "case 3 exited $?: $(grep -v '^\s' "$TMP/auto.err" | tail -3)"
check_peak "num_workers auto (cpu_budget 4), batch $B" "$TMP/auto.err" 256
grep -q "num_workers auto: at most [123] of 4 workers fit memory_limit_mb" "$TMP/auto.err" \
  || fail "case 3: auto workers were not capped: $(grep -v '^\s' "$TMP/auto.err" | head -5)"
[[ $(samples "$TMP/auto.json") -eq 96 ]] || fail "case 3: not every sample: $(cat "$TMP/auto.json")"
echo "sample_room_rss_test: 3 passed, 0 failed"
