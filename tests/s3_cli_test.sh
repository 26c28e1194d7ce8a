#!/usr/bin/env bash
# s3_cli_test.sh: --data=s3://... from the command line against a real Ceph RADOS Gateway
# (tests/testing/radosgw.sh): `run --checksum` of an ImageFolder prefix, of tar shards
# with a brace range (made by `pack`) and of a spec naming the bucket equals the same data
# on disk; `plan` lists the prefix; two processes sharing one --cache_dir and a warm run
# from it give the disk's checksum (the warm one without a miss); the summary JSON names
# the endpoint and where the credentials came from, never the secret; a wrong secret
# exits 2 with one line. Manifests (a list file in the bucket, with s3:// keys or keys
# relative to it; a local one naming s3:// keys), weighted sources mixing the prefix and a
# local folder, `plan` and `tune` work over s3://, and so do `--annotations` (COCO JSON)
# and `--label_maps`. `pack --out=s3://` writes shards that a run reads with the
# checksum of the same pack on disk, a large shard as a multipart upload; a part refused
# mid-upload, and SIGINT while a part hangs, leave no object and no multipart upload
# (exit 2, and 130 within 2 s). Against a proxy whose object GETs all hang, the run has more
# reads in flight than workers (read-ahead) and SIGINT still ends it within 1 s.
set -euo pipefail
FLOWLOADER="$1"
RADOSGW="$2"
FAULT_PROXY="$3"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$RADOSGW" start "$TMP/rgw" >"$TMP/rgw.log" 2>&1 || fail "radosgw did not start: $(cat "$TMP/rgw.log")"
trap '"$RADOSGW" stop "$TMP/rgw" >/dev/null 2>&1' EXIT
# shellcheck disable=SC1091
source "$TMP/rgw/env"
SIGN=(--aws-sigv4 "aws:amz:us-east-1:s3" -u "$RGW_ACCESS_KEY:$RGW_SECRET_KEY"
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -sf -o /dev/null)
curl "${SIGN[@]}" -X PUT "$RGW_ENDPOINT/cli" || fail "create bucket"

"$FLOWLOADER" make-dataset --out="$TMP/data" --classes=3 --images_per_class=10 \
  --min_short_side=48 --max_short_side=64 >/dev/null
"$FLOWLOADER" pack --data="$TMP/data" --out="$TMP/shards" --shard_size=100KB >/dev/null
# upload DIR PREFIX: every file below DIR as s3://cli/PREFIX/RELATIVE_PATH.
upload() {
  (cd "$1" && find . -type f | sed 's|^\./||' | while read -r f; do
     curl "${SIGN[@]}" -T "$f" "$RGW_ENDPOINT/cli/$2/$f" || exit 1
   done) || fail "upload $1"
}
upload "$TMP/data" train
upload "$TMP/shards" shards
last=$(ls "$TMP/shards" | grep -c '\.tar$')
last=$(printf '%06d' $((last - 1)))

export AWS_ACCESS_KEY_ID="$RGW_ACCESS_KEY" AWS_SECRET_ACCESS_KEY="$RGW_SECRET_KEY"
export AWS_ENDPOINT_URL="$RGW_ENDPOINT" HOME="$TMP"
# run NAME FLAGS...: a 2-epoch --checksum run writing $TMP/NAME.json.
run() {
  local name="$1"; shift
  "$FLOWLOADER" run --batch_size=4 --epochs=2 --image_size=32 --num_workers=2 --checksum \
    --metrics_address= --progress=false --summary_json="$TMP/$name.json" "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err" || fail "run $name: $(cat "$TMP/$name.err")"
}
field() { "$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$TMP/$1.json"; }

run disk --data="$TMP/data"
run prefix --data=s3://cli/train/
run disk_shards --data="$TMP/shards/train-{000000..$last}.tar"
run s3_shards --data="s3://cli/shards/train-{000000..$last}.tar"
printf 'data: s3://cli/train\nbatch_size: 4\nepochs: 2\nimage_size: 32\nnum_workers: 2\n' >"$TMP/spec.yaml"
printf 's3_endpoint: %s\ns3_addressing: path\n' "$RGW_ENDPOINT" >>"$TMP/spec.yaml"
unset AWS_ENDPOINT_URL
run spec --spec="$TMP/spec.yaml"
export AWS_ENDPOINT_URL="$RGW_ENDPOINT"

disk=$(field disk 's["data_checksum"]')
[ "$(field prefix 's["data_checksum"]')" = "$disk" ] || fail "s3 prefix differs from the disk"
[ "$(field spec 's["data_checksum"]')" = "$disk" ] || fail "a spec naming s3:// differs from the disk"
[ "$(field s3_shards 's["data_checksum"]')" = "$(field disk_shards 's["data_checksum"]')" ] ||
  fail "s3 shards differ from the same shards on disk"
storage=$(field prefix 's["storage"]["remote"][0]')
case "$storage" in
  *"endpoint $RGW_ENDPOINT (AWS_ENDPOINT_URL)"*"credentials from environment (AWS_ACCESS_KEY_ID)"*) ;;
  *) fail "summary storage: $storage" ;;
esac
[ "$(field spec 's["storage"]["remote"][0]')" != "" ] || fail "spec run has no storage"
# The summary counts the shards opened from their index file (pack writes one each) and
# those scanned instead; an ImageFolder has no "shards".
shards=$((10#$last + 1))
for name in disk_shards s3_shards; do
  [ "$(field $name 's["shards"]["count"], s["shards"]["index"]["used"], s["shards"]["index"]["scanned"]')" = "$shards $shards 0" ] ||
    fail "$name summary shards: $(field $name 's.get("shards")')"
done
[ "$(field disk 's.get("shards")')" = None ] || fail "an ImageFolder run has a shards section"
cp -r "$TMP/shards" "$TMP/shards_noidx" && rm "$TMP/shards_noidx/train-000000.tar.idx"
run noidx_shards --data="$TMP/shards_noidx/train-{000000..$last}.tar"
[ "$(field noidx_shards 's["shards"]["index"]["used"], s["shards"]["index"]["scanned"], s["shards"]["index"]["missing"]')" = "$((shards - 1)) 1 1" ] ||
  fail "a shard without its index: $(field noidx_shards 's.get("shards")')"
[ "$(field noidx_shards 's["data_checksum"]')" = "$(field disk_shards 's["data_checksum"]')" ] ||
  fail "a scanned shard differs from its index"
grep -q "credentials from environment" "$TMP/prefix.err" || fail "the run does not say whose credentials"
if grep -rq "$RGW_SECRET_KEY" "$TMP"/*.json "$TMP"/*.out "$TMP"/*.err; then fail "the secret was printed"; fi

"$FLOWLOADER" plan --data=s3://cli/train/ >"$TMP/plan.out" 2>&1 || fail "plan: $(cat "$TMP/plan.out")"
grep -q "30 files" "$TMP/plan.out" || fail "plan did not list the prefix: $(cat "$TMP/plan.out")"
# The listed keys are a part of the memory plan (the table lives as long as the run).
grep -q "sample table .* 30 listed samples" "$TMP/plan.out" ||
  fail "plan does not count the listed keys: $(cat "$TMP/plan.out")"

# The disk cache: two processes at once on one --cache_dir (ranks on one machine), then a
# warm run: the disk's checksum each time, the warm run sends no GET.
run cached_a --data=s3://cli/train/ --cache_dir="$TMP/cache" --cache_bytes=64MiB &
pid_a=$!
run cached_b --data=s3://cli/train/ --cache_dir="$TMP/cache" --cache_bytes=64MiB
wait "$pid_a" || fail "the first of two processes sharing a cache failed"
run cached_warm --data=s3://cli/train/ --cache_dir="$TMP/cache" --cache_bytes=64MiB
for name in cached_a cached_b cached_warm; do
  [ "$(field $name 's["data_checksum"]')" = "$disk" ] || fail "$name differs from the disk"
done
[ "$(field cached_warm 's["storage"]["cache"]["misses"]')" = 0 ] ||
  fail "the warm run missed: $(field cached_warm 's["storage"]')"
[ "$(field cached_warm 's["storage"]["cache"]["hits"]')" = 60 ] ||
  fail "the warm run's hits: $(field cached_warm 's["storage"]')"
"$FLOWLOADER" plan --data=s3://cli/train/ --cache_dir="$TMP/cache" --cache_bytes=64MiB \
  >"$TMP/plan_cache.out" 2>&1 || fail "plan with a cache: $(cat "$TMP/plan_cache.out")"
grep -q "disk cache (cache_dir $TMP/cache): cache_bytes 64.0 MiB, .* held now, .* free on its file system: fits" \
  "$TMP/plan_cache.out" || fail "plan does not show the disk cache: $(cat "$TMP/plan_cache.out")"

set +e
AWS_SECRET_ACCESS_KEY=not-the-secret "$FLOWLOADER" run --data=s3://cli/train/ \
  --metrics_address= --progress=false >"$TMP/wrong.out" 2>"$TMP/wrong.err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a wrong secret exited $rc, not 2: $(cat "$TMP/wrong.err")"
grep -q "SignatureDoesNotMatch" "$TMP/wrong.err" || fail "wrong secret: $(cat "$TMP/wrong.err")"
! grep -q "not-the-secret" "$TMP/wrong.err" "$TMP/wrong.out" || fail "the wrong secret was printed"
# Manifests (list files) skip listing: one in the bucket naming s3:// keys, one in the
# bucket with keys relative to it, and a local one naming s3:// keys, each in the
# ImageFolder's order, give the disk ImageFolder's checksum; so does plan.
(cd "$TMP/data" && find . -name '*.jpg' | sed 's|^\./||' | sort) >"$TMP/files.txt"
label_of() { local c="${1%%/*}"; echo $((10#${c#class_})); }
: >"$TMP/manifest_abs.txt"; : >"$TMP/manifest_rel.txt"
while read -r f; do
  printf 's3://cli/train/%s\t%s\n' "$f" "$(label_of "$f")" >>"$TMP/manifest_abs.txt"
  printf 'train/%s\t%s\n' "$f" "$(label_of "$f")" >>"$TMP/manifest_rel.txt"
done <"$TMP/files.txt"
curl "${SIGN[@]}" -T "$TMP/manifest_abs.txt" "$RGW_ENDPOINT/cli/lists/manifest.txt" || fail "upload manifest"
curl "${SIGN[@]}" -T "$TMP/manifest_rel.txt" "$RGW_ENDPOINT/cli/relative.txt" || fail "upload manifest"
run manifest_s3 --data=s3://cli/lists/manifest.txt
run manifest_rel --data=s3://cli/relative.txt
run manifest_local --data="$TMP/manifest_abs.txt"
for name in manifest_s3 manifest_rel manifest_local; do
  [ "$(field $name 's["data_checksum"]')" = "$disk" ] || fail "$name differs from the disk"
done
"$FLOWLOADER" plan --data=s3://cli/lists/manifest.txt >"$TMP/plan_manifest.out" 2>&1 ||
  fail "plan of a manifest: $(cat "$TMP/plan_manifest.out")"
grep -q "30 files" "$TMP/plan_manifest.out" || fail "plan of a manifest: $(cat "$TMP/plan_manifest.out")"
"$FLOWLOADER" plan --data="s3://cli/shards/train-{000000..$last}.tar" >"$TMP/plan_shards.out" 2>&1 ||
  fail "plan of s3 shards: $(cat "$TMP/plan_shards.out")"
grep -q "30 samples\|30 files" "$TMP/plan_shards.out" || fail "plan of s3 shards: $(cat "$TMP/plan_shards.out")"
# Weighted sources mixing an s3:// prefix and a local folder: the checksum of the same
# mixture with both sources local.
mix() {
  printf 'sources:\n  - {name: a, data: "%s", weight: 2}\n  - {name: b, data: "%s", weight: 1}\n' "$1" "$2"
  printf 'epoch_samples: 45\nbatch_size: 4\nepochs: 2\nimage_size: 32\nnum_workers: 2\n'
}
mix s3://cli/train "$TMP/data" >"$TMP/mix_s3.yaml"
mix "$TMP/data" "$TMP/data" >"$TMP/mix_local.yaml"
run mix_s3 --spec="$TMP/mix_s3.yaml"
run mix_local --spec="$TMP/mix_local.yaml"
[ "$(field mix_s3 's["data_checksum"]')" = "$(field mix_local 's["data_checksum"]')" ] ||
  fail "sources mixing s3 and local differ from the same mixture on disk"
# tune over the prefix: a recommendation, and a best.yaml naming the bucket.
"$FLOWLOADER" tune --data=s3://cli/train/ --image_size=32 --trial_seconds=0.2 --time_budget=6 \
  --batch_sizes=8 --out="$TMP/tune" >"$TMP/tune.out" 2>"$TMP/tune.err" ||
  fail "tune over s3: $(cat "$TMP/tune.err")"
grep -q "^best: num_workers [0-9]*, batch_size 8" "$TMP/tune.out" || fail "tune over s3: $(cat "$TMP/tune.out")"
grep -q "s3://cli/train" "$TMP/tune/best.yaml" || fail "best.yaml: $(cat "$TMP/tune/best.yaml")"

# COCO annotations and segmentation label maps in the bucket (images too): the disk's
# checksums, from flags and from a spec (whose s3:// paths are not made relative to it).
"$FLOWLOADER" make-dataset --task=detection --out="$TMP/det" --images=6 >/dev/null
"$FLOWLOADER" make-dataset --task=segmentation --out="$TMP/seg" --images=6 >/dev/null
upload "$TMP/det" det
upload "$TMP/seg" seg
run det_disk --data="$TMP/det/images" --annotations="$TMP/det/annotations/instances.json"
run det_s3 --data=s3://cli/det/images --annotations=s3://cli/det/annotations/instances.json
printf 'data: s3://cli/det/images\nannotations: s3://cli/det/annotations/instances.json\n' >"$TMP/det.yaml"
run det_spec --spec="$TMP/det.yaml"
run seg_disk --data="$TMP/seg/images" --label_maps="$TMP/seg/label_maps"
run seg_s3 --data=s3://cli/seg/images --label_maps=s3://cli/seg/label_maps
for name in det_s3 det_spec; do
  [ "$(field $name 's["data_checksum"]')" = "$(field det_disk 's["data_checksum"]')" ] ||
    fail "$name: COCO from the bucket differs from the disk"
done
[ "$(field seg_s3 's["data_checksum"]')" = "$(field seg_disk 's["data_checksum"]')" ] ||
  fail "label maps from the bucket differ from the disk"

# pack --out=s3://: small shards (one PUT each) and one large shard (a multipart upload
# in 5 MiB parts) read back with the checksums of the same packs on disk.
"$FLOWLOADER" pack --data="$TMP/data" --out=s3://cli/packed/ --shard_size=100KB >"$TMP/pack.out" 2>&1 ||
  fail "pack to s3: $(cat "$TMP/pack.out")"
grep -q "run it: flowloader run --data='s3://cli/packed/train-{000000..$last}.tar'" "$TMP/pack.out" ||
  fail "pack to s3 printed: $(cat "$TMP/pack.out")"
run packed --data="s3://cli/packed/train-{000000..$last}.tar"
[ "$(field packed 's["data_checksum"]')" = "$(field disk_shards 's["data_checksum"]')" ] ||
  fail "shards packed to s3 differ from the same pack on disk"
"$FLOWLOADER" make-dataset --out="$TMP/big" --classes=2 --images_per_class=7 \
  --min_short_side=900 --max_short_side=1000 --noise=40 >/dev/null
"$FLOWLOADER" pack --data="$TMP/big" --out="$TMP/big_shards" --shard_size=1GB >/dev/null
"$FLOWLOADER" pack --data="$TMP/big" --out=s3://cli/big --shard_size=1GB --part_size=5MiB \
  >"$TMP/pack_big.out" 2>&1 || fail "large pack to s3: $(cat "$TMP/pack_big.out")"
big_bytes=$(stat -c %s "$TMP/big_shards/train-000000.tar")
[ "$big_bytes" -gt $((10 << 20)) ] || fail "the large shard has only $big_bytes bytes: no 3 parts"
run big_disk --data="$TMP/big_shards/train-000000.tar"
run big_s3 --data=s3://cli/big/train-000000.tar
[ "$(field big_s3 's["data_checksum"]')" = "$(field big_disk 's["data_checksum"]')" ] ||
  fail "a shard uploaded in parts differs from the same pack on disk"
# s3get QUERY: the signed GET of bucket cli with QUERY (sorted, '/' encoded as Signature V4
# signs it), failing unless the answer is ROOT, the expected document.
s3get() {
  local body
  body=$(curl --aws-sigv4 "aws:amz:us-east-1:s3" -u "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -sf "$RGW_ENDPOINT/cli?$1") || return 1
  case "$body" in *"<$2"*) printf '%s' "$body" ;; *) return 1 ;; esac
}
# uploads: how many multipart uploads of bucket cli are under way ("" if unlisted).
uploads() {
  local body
  body=$(s3get "uploads=" ListMultipartUploadsResult) || return 1
  grep -o "<Upload>" <<<"$body" | wc -l || true
}
# keys NAME: how many keys lie under NAME/ in bucket cli ("" if unlisted).
keys() {
  local body
  body=$(s3get "list-type=2&prefix=$1%2F" ListBucketResult) || return 1
  grep -o "<Key>" <<<"$body" | wc -l || true
}
[ "$(keys big)" = 3 ] || fail "s3://cli/big/ holds $(keys big) keys, not the shard, its index and classes.txt"
[ "$(uploads)" = 0 ] || fail "$(uploads) multipart uploads left after the packs"
# start_proxy MODE: a fault proxy in MODE (every request) on $PPORT, logging to $TMP/MODE.log.
start_proxy() {
  PPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$PY" "$FAULT_PROXY" "$RGW_PORT" "$PPORT" 1 "$1" "$TMP/$1.log" &
  PROXY_PID=$!
  trap 'kill $PROXY_PID 2>/dev/null; "$RADOSGW" stop "$TMP/rgw" >/dev/null 2>&1' EXIT
  for _ in $(seq 100); do
    curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PPORT/probe?x" && break
    sleep 0.05
  done
}
start_proxy deny_part2
set +e
AWS_ENDPOINT_URL="http://127.0.0.1:$PPORT" "$FLOWLOADER" pack --data="$TMP/big" \
  --out=s3://cli/denied --shard_size=1GB --part_size=5MiB >"$TMP/denied.out" 2>&1
rc=$?
set -e
kill $PROXY_PID; wait $PROXY_PID 2>/dev/null || true
[ "$rc" -eq 2 ] || fail "a refused part exited $rc: $(cat "$TMP/denied.out")"
grep -q "AccessDenied" "$TMP/denied.out" || fail "a refused part: $(cat "$TMP/denied.out")"
grep -q "partNumber=2" "$TMP/deny_part2.log" || fail "part 2 was not refused: $(cat "$TMP/deny_part2.log")"
[ "$(keys denied)" = 0 ] || fail "a refused upload left $(keys denied) keys"
[ "$(uploads)" = 0 ] || fail "a refused upload left $(uploads) multipart uploads"
# SIGINT while part 2 hangs: exit 130 within 2 s, the upload (part 1 sent) aborted.
start_proxy hang_part2
AWS_ENDPOINT_URL="http://127.0.0.1:$PPORT" "$FLOWLOADER" pack --data="$TMP/big" \
  --out=s3://cli/interrupted --shard_size=1GB --part_size=5MiB >"$TMP/interrupted.out" 2>&1 &
pid=$!
for _ in $(seq 200); do
  grep -q "^hang_part2 PUT" "$TMP/hang_part2.log" 2>/dev/null && break
  sleep 0.05
done
grep -q "^hang_part2 PUT" "$TMP/hang_part2.log" || fail "no part upload hung: $(cat "$TMP/interrupted.out")"
[ "$(uploads)" = 1 ] || fail "$(uploads) multipart uploads under way while part 2 hangs, not 1"
t0=$(date +%s.%N)
kill -INT $pid
set +e; wait $pid; rc=$?; set -e
took=$("$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)")
kill $PROXY_PID; wait $PROXY_PID 2>/dev/null || true
[ "$rc" -eq 130 ] || fail "SIGINT during an upload exited $rc: $(cat "$TMP/interrupted.out")"
"$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 2.0 else 1)" "$took" ||
  fail "SIGINT during an upload took $took s (over 2 s)"
[ "$(keys interrupted)" = 0 ] || fail "an interrupted upload left $(keys interrupted) keys"
[ "$(uploads)" = 0 ] || fail "an interrupted upload left $(uploads) multipart uploads"

# SIGINT while every object GET hangs (the listing answers): read-ahead has more requests
# in flight than the 2 workers, and the run still ends within 1 s of the signal, exit 130.
PPORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$PY" "$FAULT_PROXY" "$RGW_PORT" "$PPORT" 1 hang_reads "$TMP/hang.log" &
PROXY_PID=$!
trap 'kill $PROXY_PID 2>/dev/null; "$RADOSGW" stop "$TMP/rgw" >/dev/null 2>&1' EXIT
for _ in $(seq 100); do
  curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$PPORT/probe?x" && break
  sleep 0.05
done
AWS_ENDPOINT_URL="http://127.0.0.1:$PPORT" "$FLOWLOADER" run --data=s3://cli/train/ \
  --num_workers=2 --image_size=32 --metrics_address= --progress=false \
  --summary_json="$TMP/hang.json" >/dev/null 2>"$TMP/hang.err" &
pid=$!
hung=0
for _ in $(seq 200); do
  hung=$(grep -c "^hang_reads GET" "$TMP/hang.log" 2>/dev/null || true)
  [ "$hung" -ge 4 ] && break
  sleep 0.05
done
[ "$hung" -ge 4 ] || fail "only $hung reads in flight against the hanging server: $(cat "$TMP/hang.err")"
t0=$(date +%s.%N)
kill -INT $pid
set +e; wait $pid; rc=$?; set -e
took=$("$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" "$(date +%s.%N)")
[ "$rc" -eq 130 ] || fail "SIGINT against a hanging server exited $rc: $(cat "$TMP/hang.err")"
"$PY" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1.0 else 1)" "$took" ||
  fail "SIGINT against a hanging server took $took s (over 1 s)"
echo PASS
