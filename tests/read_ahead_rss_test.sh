#!/usr/bin/env bash
# read_ahead_rss_test.sh: remote tar shards with members of 140 MB stay within
# memory_limit_mb 512 (one worker, no block cache, read-ahead on): a read ahead holds its
# bytes outside the worker's share until the worker takes them, and the read stage read
# ahead members of any size (a 7000x7000 BMP, a 13000x13000 JPEG) from Python's
# http.server, which ignores Range: 680 MiB peak (401 with --read_ahead=0). Now only
# members up to the read-ahead's bound (max_bytes over max_in_flight) are read ahead,
# larger ones by their worker within its share; every sample is delivered or counted.
# 2. The same under memory_limit_mb 256 with the default HTTP block cache: refused at
# Create (the 142 MB shard's cache); the cache is now cut first, as the seek index is.
# Sanitized builds map shadow memory: there RSS says nothing, only the counts are checked.
source tests/testing/cli_test_lib.sh "$@"
LIMIT_MB=512

"$PY" - "$TMP/tars" <<'PYEOF'
import io, os, sys, tarfile
from PIL import Image
root = sys.argv[1]
os.makedirs(root, exist_ok=True)
def enc(img, fmt, **kw):
    b = io.BytesIO(); img.save(b, fmt, **kw); return b.getvalue()
small = enc(Image.new("RGB", (500, 375), (10, 120, 30)), "JPEG", quality=60)
shards = {
  "a": [("small0", "jpg", small),
        ("huge", "jpg", enc(Image.new("RGB", (13000, 13000), (200, 30, 30)), "JPEG", quality=60)),
        ("bmp", "bmp", enc(Image.new("RGB", (7000, 7000), (20, 220, 120)), "BMP")),
        ("small1", "jpg", small)],
  "b": [("png", "png", enc(Image.new("RGB", (6000, 6000), (1, 2, 3)), "PNG")), ("small2", "jpg", small),
        ("large", "jpg", enc(Image.new("RGB", (8000, 8000), (9, 99, 199)), "JPEG", quality=60)),
        ("small3", "jpg", small)],
}
for shard, members in shards.items():
    with tarfile.open(f"{root}/train-{shard}.tar", "w", format=tarfile.GNU_FORMAT) as t:
        for i, (key, ext, data) in enumerate(members):
            for e, d in ((ext, data), ("cls", str(i % 2).encode())):
                info = tarfile.TarInfo(f"{shard}{key}.{e}")
                info.size = len(d)
                t.addfile(info, io.BytesIO(d))
PYEOF

# Python's http.server (no Range support) on a free port, stopped on exit.
"$PY" -c "
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
open(sys.argv[2], 'w').write(str(server.server_address[1]))
server.serve_forever()
" "$TMP/tars" "$TMP/port" >"$TMP/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s "$TMP/port" ]] && break; sleep 0.1; done
PORT=$(cat "$TMP/port")

cat >"$TMP/run.yaml" <<EOF2
data: "http://127.0.0.1:$PORT/train-{a,b}.tar"
batch_size: 2
num_workers: 1
epochs: 2
memory_limit_mb: $LIMIT_MB
http_cache_mb: 0
stages:
  - type: read
  - type: decode
  - type: transforms
    ops:
      - random_invert(p=1.0)
      - resize(size=[224, 224])
EOF2

# check_run LABEL NAME LIMIT_MB: the run of $TMP/NAME.yaml delivered or skipped (as
# decode_memory / op_memory) all 16 samples of its 2 epochs, delivered at least the 8 of
# the four small photos and the 6000x6000 PNG, and, unsanitized, peaked within LIMIT_MB.
check_run() {
  "$PY" - "$1" "$TMP/$2.json" "$TMP/$2.err" "$3" "$SANITIZED" <<'PYEOF'
import json, re, sys
label, summary, log, limit_mb, sanitized = sys.argv[1:]
s = json.load(open(summary))
kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(log).read()).group(1))
print(f"read_ahead_rss_test: {label}{s['samples']} samples, skipped {s['errors']}, "
      f"peak RSS {kb / 1024:.0f} MiB (limit {limit_mb})")
skipped = s["errors"].get("decode_memory", 0) + s["errors"].get("op_memory", 0)
assert s["samples"] + skipped == 16 and s["samples"] >= 8, s
if sanitized == "0":
    assert kb / 1024 <= int(limit_mb), f"peak RSS {kb / 1024:.0f} MiB over {limit_mb}"
PYEOF
}

/usr/bin/time -v "$FLOWLOADER" run --spec="$TMP/run.yaml" --metrics_address= --noprogress \
  --summary_json="$TMP/run.json" >/dev/null 2>"$TMP/run.err" \
  || fail "run exited $?: $(grep -v '^\s' "$TMP/run.err" | tail -3)"
check_run "" run "$LIMIT_MB"

# 2. The same shards with the default HTTP block cache (http_cache_mb 256, the 142 MB
# shard admitted) under memory_limit_mb 256: the cache is optional, cut before a refusal
# (the run was refused at Create), and the run stays within the limit.
sed -e "s/memory_limit_mb: $LIMIT_MB/memory_limit_mb: 256/" -e "/http_cache_mb/d" \
  "$TMP/run.yaml" >"$TMP/cache.yaml"
/usr/bin/time -v "$FLOWLOADER" run --spec="$TMP/cache.yaml" --metrics_address= --noprogress \
  --summary_json="$TMP/cache.json" >/dev/null 2>"$TMP/cache.err" \
  || fail "case 2 exited $?: $(grep -v '^\s' "$TMP/cache.err" | tail -3)"
grep -q "HTTP block cache cut to [0-9]* MiB (http_cache_mb 256)" "$TMP/cache.err" \
  || fail "case 2: the cache was not cut: $(grep -v '^\s' "$TMP/cache.err" | head -5)"
check_run "http cache cut: " cache 256
echo "read_ahead_rss_test: 2 passed, 0 failed"
