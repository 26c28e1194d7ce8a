#!/usr/bin/env bash
# cli_test.sh: the `flowloader` command line end to end, on a dataset it generates.
# Checks the documented contract: summary JSON fields, --keys_out, the metrics endpoint
# (fetched with a real HTTP client while the run lingers), exit codes and one-line errors.
set -euo pipefail
FLOWLOADER="$1"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=3 --images_per_class=20 \
  --min_short_side=64 --max_short_side=128 >/dev/null

# 1. A train run over two epochs with summary and keys.
"$FLOWLOADER" run --data="$DATA" --batch_size=16 --num_workers=2 --epochs=2 --image_size=64 \
  --metrics_address= --summary_json="$TMP/summary.json" --keys_out="$TMP/keys.txt" \
  --trace_out="$TMP/trace.json" --progress=false >"$TMP/out.txt" 2>"$TMP/err.txt" || fail "run exited $?: $(cat "$TMP/err.txt")"
grep -q "decode" "$TMP/out.txt" || fail "no per-stage table: $(cat "$TMP/out.txt")"
grep -q "^diagnosis: " "$TMP/out.txt" || fail "no diagnosis line"
"$PY" - "$TMP/summary.json" "$TMP/keys.txt" "$DATA" <<'PYEOF'
import json, os, sys, collections
summary = json.load(open(sys.argv[1]))
for key, kind in [("samples", int), ("batches", int), ("epochs", int), ("seconds", float),
                  ("images_per_second", float), ("skipped", int), ("errors", dict),
                  ("num_workers", int), ("batch_size", int), ("stages", dict)]:
    assert isinstance(summary[key], kind), (key, summary[key])
assert summary["samples"] == 120, summary["samples"]
assert summary["batches"] == 8, summary["batches"]        # ceil(60/16) = 4 per epoch
assert summary["epochs"] == 2 and summary["skipped"] == 0
assert summary["num_workers"] == 2 and summary["batch_size"] == 16
for stage in ("read", "decode", "augment", "collate"):
    s = summary["stages"][stage]
    assert isinstance(s["items"], int) and isinstance(s["busy_seconds"], float), s
assert summary["stages"]["decode"]["items"] == 120
keys = open(sys.argv[2]).read().split("\n")[:-1]
assert len(keys) == 120, len(keys)
counts = collections.Counter(keys)
assert set(counts.values()) == {2}, "each sample once per epoch"
for k in counts:
    assert os.path.isfile(os.path.join(sys.argv[3], k)), k
assert keys[:60] != keys[60:], "epochs should be shuffled differently"
PYEOF
"$PY" - "$TMP/trace.json" <<'PYEOF'
import json, sys, collections
trace = json.load(open(sys.argv[1]))
spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
by_stage = collections.Counter(e["name"] for e in spans)
for stage in ("read", "decode", "augment"):
    assert by_stage[stage] == 120, (stage, by_stage)
assert by_stage["consumer wait"] >= 8, by_stage
assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
names = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M"]
assert "consumer (Next)" in names and any(n.startswith("worker ") for n in names), names
PYEOF

# 2. Eval run with metrics served; scrape it while the run lingers.
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$FLOWLOADER" run --data="$DATA" --transform=eval --batch_size=8 --image_size=32 \
  --metrics_address="127.0.0.1:$PORT" --linger_seconds=5 --progress=false >/dev/null 2>&1 &
PID=$!
"$PY" - "$PORT" <<'PYEOF' || { kill $PID; fail "metrics endpoint"; }
import sys, time, urllib.request
url = "http://127.0.0.1:%s/metrics" % sys.argv[1]
deadline = time.time() + 20
while True:
    try:
        text = urllib.request.urlopen(url, timeout=2).read().decode()
        if 'flowloader_stage_items_out_total{pipeline="default",stage="decode"} 60' in text:
            break
    except OSError:
        pass
    if time.time() > deadline:
        raise SystemExit("metrics never showed 60 decoded items")
    time.sleep(0.2)
assert "flowloader_stage_busy_seconds_total" in text
PYEOF
wait $PID || fail "metrics run exited $?"

# 3. Bad flags and bad data: non-zero exit, one line, no stack trace.
expect_error() {
  local want="$1"; shift
  set +e
  "$FLOWLOADER" "$@" >"$TMP/o" 2>"$TMP/e"
  local rc=$?
  set -e
  [ $rc -ne 0 ] || fail "'$*' exited 0"
  [ $rc -lt 128 ] || fail "'$*' crashed with $rc"
  grep -q -- "$want" "$TMP/e" || fail "'$*': expected '$want' in: $(cat "$TMP/e")"
  # Info/warning log lines aside, the error is one line.
  [ "$(grep -v '^flowloader: [IW] ' "$TMP/e" | grep -c .)" -eq 1 ] ||
    fail "'$*' printed more than one error line: $(cat "$TMP/e")"
}
expect_error "required" run
expect_error "not found" run --data="$TMP/missing" --metrics_address=
expect_error "train or eval" run --data="$DATA" --transform=sideways --metrics_address=
expect_error "skip or fail" run --data="$DATA" --on_error=maybe --metrics_address=
expect_error "batch_size" run --data="$DATA" --batch_size=0 --metrics_address=
expect_error "batch_size" run --data="$DATA" --batch_size=abc --metrics_address=
expect_error "max_errors" run --data="$DATA" --max_errors=lots --metrics_address=
expect_error "Unknown command line flag" run --data="$DATA" --no_such_flag=1
expect_error "unknown command" fly

# 4. --on_error=fail names the file; skip counts it.
cp "$DATA/class_001/img_00003.jpg" "$TMP/keep.jpg"
head -c 300 "$TMP/keep.jpg" >"$DATA/class_001/img_00003.jpg"
expect_error "class_001/img_00003.jpg" run --data="$DATA" --on_error=fail --metrics_address= \
  --image_size=32 --progress=false
"$FLOWLOADER" run --data="$DATA" --image_size=32 --metrics_address= --progress=false \
  --summary_json="$TMP/skip.json" >/dev/null 2>"$TMP/skip_err.txt" || fail "skip run failed"
grep -q "skipped class_001/img_00003.jpg (truncated)" "$TMP/skip_err.txt" || fail "skip not logged"
"$PY" -c "import json,sys; s=json.load(open('$TMP/skip.json')); assert s['skipped']==1 and s['errors']=={'truncated':1} and s['samples']==59, s"
cp "$TMP/keep.jpg" "$DATA/class_001/img_00003.jpg"

# 5. SIGINT mid-run: the summary is still written and the exit code is 130.
"$FLOWLOADER" run --data="$DATA" --epochs=0 --image_size=32 --metrics_address= \
  --progress=false --summary_json="$TMP/int.json" >/dev/null 2>&1 &
PID=$!
sleep 1.5
kill -INT $PID
set +e; wait $PID; rc=$?; set -e
[ $rc -eq 130 ] || fail "SIGINT exit code $rc, want 130"
"$PY" -c "import json; s=json.load(open('$TMP/int.json')); assert s['samples']>0, s"
"$FLOWLOADER" run --data="$DATA" --epochs=0 --image_size=32 --metrics_address= \
  --progress=false >/dev/null 2>&1 &
PID=$!
sleep 1
kill -TERM $PID
set +e; wait $PID; rc=$?; set -e
[ $rc -eq 143 ] || fail "SIGTERM exit code $rc, want 143"

echo "cli_test: 1 passed, 0 failed"
