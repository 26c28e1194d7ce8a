#!/usr/bin/env bash
# checksum_cli_test.sh: `flowloader run --checksum` proves two runs delivered the same
# data: 1 and 2 workers give the same data_checksum, another seed a different one, a run
# resumed at an epoch boundary has the uninterrupted run's checksum for the epoch it
# delivered whole, `checksum: true` in a spec does what the flag does, without the
# flag the summary has no checksum, and a detection run's checksum covers its targets
# (one box moved by a pixel in the annotations, the images the same, changes it).
set -euo pipefail
FLOWLOADER="$1"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=3 --images_per_class=10 \
  --min_short_side=48 --max_short_side=64 >/dev/null

# run NAME FLAGS...: a 2-epoch run writing $TMP/NAME.json.
run() {
  local name="$1"; shift
  "$FLOWLOADER" run --data="$DATA" --batch_size=4 --epochs=2 --image_size=32 \
    --metrics_address= --progress=false --summary_json="$TMP/$name.json" "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err" || fail "run $name: $(cat "$TMP/$name.err")"
}
# field NAME EXPR: a Python expression over the summary `s` of run NAME.
field() { "$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$TMP/$1.json"; }

run one --checksum --num_workers=1
run two --checksum --num_workers=2
run seed1 --checksum --num_workers=2 --seed=1
run resumed --checksum --num_workers=2 --resume=1:0
run plain --num_workers=2
printf 'data: %s\nbatch_size: 4\nepochs: 2\nimage_size: 32\nchecksum: true\n' "$DATA" >"$TMP/spec.yaml"
"$FLOWLOADER" run --spec="$TMP/spec.yaml" --metrics_address= --progress=false \
  --summary_json="$TMP/spec.json" >/dev/null 2>&1 || fail "run --spec with checksum: true"

one=$(field one 's["data_checksum"]')
[[ "$one" =~ ^xxh3:[0-9a-f]{16}$ ]] || fail "data_checksum is not xxh3:XXXXXXXXXXXXXXXX: '$one'"
[ "$(field two 's["data_checksum"]')" = "$one" ] || fail "1 and 2 workers delivered different data"
[ "$(field spec 's["data_checksum"]')" = "$one" ] || fail "checksum: true in a spec differs from --checksum"
[ "$(field seed1 's["data_checksum"]')" != "$one" ] || fail "another seed gave the same checksum"
grep -q "data checksum $one" "$TMP/one.out" || fail "run does not print the checksum: $(cat "$TMP/one.out")"
[ "$(field one 'len(s["epoch_checksums"])')" = 2 ] || fail "epoch_checksums: $(field one 's["epoch_checksums"]')"
[ "$(field resumed 's["epoch_checksums"]["1"]')" = "$(field one 's["epoch_checksums"]["1"]')" ] ||
  fail "the run resumed at 1:0 delivered a different epoch 1"
[ "$(field resumed 'list(s["epoch_checksums"])')" = "['1']" ] || fail "resumed run's epochs"
[ "$(field plain '"data_checksum" in s')" = False ] || fail "data_checksum without --checksum"
# Detection: the checksum of (images, targets) is the same for 1 and 2 workers and moves
# when only one annotation's box does.
"$FLOWLOADER" make-dataset --task=detection --out="$TMP/det" --images=8 >/dev/null
"$PY" - "$TMP/det/annotations/instances.json" "$TMP/moved.json" <<'PYEOF'
import json, sys
coco = json.load(open(sys.argv[1]))
coco["annotations"][0]["bbox"][0] += 1.0
json.dump(coco, open(sys.argv[2], "w"))
PYEOF
det_run() {  # NAME ANNOTATIONS WORKERS; a resize keeps every box (a random crop may not).
  printf 'data: %s\nannotations: %s\nstages:\n  - type: read\n  - type: annotations
  - type: decode\n  - type: transforms\n    ops:\n      - resize: {size: [64, 64]}
      - random_horizontal_flip\n      - normalize\n' "$TMP/det/images" "$2" >"$TMP/$1.yaml"
  "$FLOWLOADER" run --spec="$TMP/$1.yaml" --num_workers="$3" --batch_size=4 --epochs=1 \
    --checksum --metrics_address= --progress=false --summary_json="$TMP/$1.json" \
    >"$TMP/$1.out" 2>"$TMP/$1.err" || fail "run $1: $(cat "$TMP/$1.err")"
}
det_run det_one "$TMP/det/annotations/instances.json" 1
det_run det_two "$TMP/det/annotations/instances.json" 2
det_run det_moved "$TMP/moved.json" 2
det=$(field det_one 's["data_checksum"]')
[ "$(field det_two 's["data_checksum"]')" = "$det" ] || fail "detection: 1 and 2 workers differ"
[ "$(field det_moved 's["data_checksum"]')" != "$det" ] ||
  fail "detection: a moved box left the checksum unchanged (targets not hashed)"
echo PASS
