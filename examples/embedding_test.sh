#!/usr/bin/env bash
# embedding_test.sh: runs examples/embedding (docs/embedding.md) on a dataset it makes.
# Checks what the snippet promises: every sample once per epoch, in float32 [N,3,224,224]
# batches with the ImageFolder labels, the metrics server started (an ephemeral port
# here), and a metrics port in use reported as one line by the snippet's status return.
set -euo pipefail
EMBEDDING="$1"
FLOWLOADER="$2"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=2 --images_per_class=5 \
  --min_short_side=64 --max_short_side=96 >/dev/null

# 1. Two epochs of 10 samples: one batch each (batch_size 64).
"$EMBEDDING" "$DATA" 2 127.0.0.1:0 >"$TMP/out.txt" 2>"$TMP/err.txt" \
  || fail "embedding exited $?: $(cat "$TMP/err.txt")"
"$PY" - "$TMP/out.txt" <<'PYEOF'
import collections, sys
lines = [l.split() for l in open(sys.argv[1]) if l.startswith("batch ")]
assert [(l[1], l[2]) for l in lines] == [("0", "0"), ("1", "0")], lines
for l in lines:
    fields = dict(f.split("=", 1) for f in l[3:])
    assert fields["shape"] == "[10,3,224,224]", fields
    assert fields["dtype"] == "float32", fields
    keys, labels = fields["keys"].split(","), fields["labels"].split(",")
    assert len(set(keys)) == 10, keys
    for key, label in zip(keys, labels):     # class_000/... is label 0, class_001/... 1
        assert int(key.split("/")[0][-3:]) == int(label), (key, label)
PYEOF

# 2. A metrics port in use: the snippet returns MetricsServer::Shared's status.
"$PY" -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(120)' >"$TMP/port.txt" &
HOLDER=$!
trap 'kill "$HOLDER" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$TMP/port.txt" ] && break; sleep 0.1; done
PORT="$(cat "$TMP/port.txt")"
[ -n "$PORT" ] || fail "the port holder did not start"
rc=0
"$EMBEDDING" "$DATA" 1 "127.0.0.1:$PORT" >/dev/null 2>"$TMP/err.txt" || rc=$?
[ "$rc" -eq 1 ] || fail "with port $PORT in use embedding exited $rc, want 1"
# stderr also holds the pipeline's log lines ("flowloader: I ..."); the error is one line.
grep "^embedding: " "$TMP/err.txt" >"$TMP/error.txt" || true
[ "$(wc -l <"$TMP/error.txt")" -eq 1 ] || fail "want one error line, got: $(cat "$TMP/err.txt")"
grep -q "127.0.0.1:$PORT: address in use" "$TMP/error.txt" \
  || fail "error does not say the port is in use: $(cat "$TMP/error.txt")"
echo PASS
