#!/usr/bin/env bash
# shard_env_cli_test.sh: `flowloader run` takes --rank/--world_size from torchrun's
# RANK/WORLD_SIZE or Slurm's SLURM_PROCID/SLURM_NTASKS, logs where it found them, and
# shards 15 files over 2 ranks as DistributedSampler does: 8 each with pad (one file
# twice), 7 each with --even_shards=trim; the flags beat the environment.
set -euo pipefail
FLOWLOADER="$1"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }
unset RANK WORLD_SIZE SLURM_PROCID SLURM_NTASKS

"$FLOWLOADER" make-dataset --out="$TMP/data" --classes=3 --images_per_class=5 \
  --min_short_side=32 --max_short_side=40 >/dev/null
run() {  # run NAME [flags...]: keys in $TMP/NAME.keys, log in $TMP/NAME.err
  local name="$1"; shift
  "$FLOWLOADER" run --data="$TMP/data" --image_size=16 --shuffle=false --metrics_address= \
    --progress=false --keys_out="$TMP/$name.keys" "$@" >/dev/null 2>"$TMP/$name.err" ||
    fail "$name exited $?: $(cat "$TMP/$name.err")"
}

for mode in pad trim; do
  RANK=0 WORLD_SIZE=2 run "$mode.0" --even_shards=$mode
  RANK=1 WORLD_SIZE=2 run "$mode.1" --even_shards=$mode
  grep -q "shard: rank 1 of 2 (from RANK/WORLD_SIZE)" "$TMP/$mode.1.err" ||
    fail "no shard log line: $(cat "$TMP/$mode.1.err")"
done
[ "$(wc -l <"$TMP/pad.0.keys")" -eq 8 ] && [ "$(wc -l <"$TMP/pad.1.keys")" -eq 8 ] ||
  fail "pad: want 8 + 8 keys"
[ "$(sort -u "$TMP/pad.0.keys" "$TMP/pad.1.keys" | wc -l)" -eq 15 ] || fail "pad: not every file"
# DistributedSampler pads with the first samples: rank 1's last is the order's first.
[ "$(tail -1 "$TMP/pad.1.keys")" = "$(head -1 "$TMP/pad.0.keys")" ] || fail "pad: wrong padding"
[ "$(wc -l <"$TMP/trim.0.keys")" -eq 7 ] && [ "$(wc -l <"$TMP/trim.1.keys")" -eq 7 ] ||
  fail "trim: want 7 + 7 keys"
[ "$(sort -u "$TMP/trim.0.keys" "$TMP/trim.1.keys" | wc -l)" -eq 14 ] || fail "trim: overlap"

SLURM_PROCID=2 SLURM_NTASKS=3 run slurm
grep -q "shard: rank 2 of 3 (from SLURM_PROCID/SLURM_NTASKS)" "$TMP/slurm.err" ||
  fail "slurm: $(cat "$TMP/slurm.err")"
[ "$(wc -l <"$TMP/slurm.keys")" -eq 5 ] || fail "slurm: want 5 keys"
RANK=1 WORLD_SIZE=2 run flags --rank=0 --world_size=1
grep -q "shard: rank 0 of 1 (from --rank/--world_size)" "$TMP/flags.err" ||
  fail "flags: $(cat "$TMP/flags.err")"
[ "$(wc -l <"$TMP/flags.keys")" -eq 15 ] || fail "flags: want all 15 keys"
set +e
RANK=one WORLD_SIZE=2 "$FLOWLOADER" run --data="$TMP/data" --metrics_address= 2>"$TMP/bad.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "RANK='one' is not an integer" "$TMP/bad.err" ||
  fail "bad RANK: exit $rc: $(cat "$TMP/bad.err")"
echo PASS
