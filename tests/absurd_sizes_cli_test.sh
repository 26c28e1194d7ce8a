#!/usr/bin/env bash
# absurd_sizes_cli_test.sh: sizes no machine can honour are refused up front, in bounded
# time and memory: exit 2 and one line on stderr naming the value, the limit and the flag
# (--num_workers=100000 used to deliver and then die in pthread_create; --epoch_samples
# of 10^9, 10^12 and 2^62 sat with no batch while the epoch's order grew; a brace range
# of 10^9 shards took 538 MB to fail with "not_found").
source tests/testing/cli_test_lib.sh "$@"

"$FLOWLOADER" make-dataset --out="$TMP/ds" --classes=2 --images_per_class=4 \
  --min_short_side=48 --max_short_side=64 >/dev/null

# refused NAME WORDS... -- FLAGS...: exit 2 within 10 s, one stderr line (after info logs)
# holding every one of WORDS.
refused() {
  local name="$1"; shift
  local words=()
  while [ "$1" != "--" ]; do words+=("$1"); shift; done
  shift
  local rc=0
  timeout -s KILL 10 "$FLOWLOADER" run --device=cpu --image_size=32 --batch_size=4 \
    --epochs=1 --metrics_address= --progress=false "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
  [ "$rc" = 2 ] || fail "$name: exit $rc, expected 2: $(tail -2 "$TMP/$name.err")"
  grep -v '^flowloader: I ' "$TMP/$name.err" >"$TMP/$name.msg" || true
  [ "$(wc -l <"$TMP/$name.msg")" = 1 ] || fail "$name: not one line: $(cat "$TMP/$name.msg")"
  for w in "${words[@]}"; do
    grep -qF -- "$w" "$TMP/$name.msg" || fail "$name: no '$w' in: $(cat "$TMP/$name.msg")"
  done
  echo "$name: $(cat "$TMP/$name.msg")"
}
refused workers 100000 1024 num_workers -- --data="$TMP/ds" --num_workers=100000
refused epoch_1e9 1000000000 epoch_samples -- --data="$TMP/ds" --num_workers=1 \
  --prefetch_batches=2 --epoch_samples=1000000000 --memory_limit_mb=4096
refused epoch_1e12 1000000000000 epoch_samples -- --data="$TMP/ds" --epoch_samples=1000000000000
refused epoch_2e62 4611686018427387904 1099511627776 epoch_samples -- --data="$TMP/ds" \
  --epoch_samples=4611686018427387904
refused braces "{000000..999999999}" 1000000000 1000000 data -- \
  --data="$TMP/train-{000000..999999999}.tar"
# Within the limits, the same flags run.
timeout -s KILL 60 "$FLOWLOADER" run --data="$TMP/ds" --device=cpu --image_size=32 \
  --batch_size=4 --epochs=1 --metrics_address= --progress=false --num_workers=64 \
  --epoch_samples=20000 >/dev/null 2>"$TMP/ok.err" || fail "in-limit run: $(tail -2 "$TMP/ok.err")"
echo PASS
