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
# Without a GPU every run says so in words that do not read as an error; the CUDA
# runtime's (or the build's) reason only under --verbose.
if ! grep -q "batches on cuda:" "$TMP/err.txt"; then
  grep -q "^flowloader: I pipeline 'default': no CUDA device; batches stay in host memory$" \
    "$TMP/err.txt" || fail "no-GPU line: $(cat "$TMP/err.txt")"
  if grep -qiE "cudaGetDeviceCount|driver|toolkit|no CUDA device because" "$TMP/err.txt"; then
    fail "the no-GPU reason without --verbose: $(cat "$TMP/err.txt")"
  fi
  "$FLOWLOADER" run --data="$DATA" --batch_size=16 --epochs=1 --image_size=32 --verbose \
    --metrics_address= --progress=false >/dev/null 2>"$TMP/verbose.txt" || fail "--verbose run"
  grep -q "^flowloader: D pipeline 'default': no CUDA device because ." "$TMP/verbose.txt" \
    || fail "--verbose gave no reason: $(cat "$TMP/verbose.txt")"
fi
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
expect_error "--transform must be one of train, eval" run --data="$DATA" --transform=sideways --metrics_address=
expect_error "skip or fail" run --data="$DATA" --on_error=maybe --metrics_address=
expect_error "batch_size" run --data="$DATA" --batch_size=0 --metrics_address=
expect_error "batch_size" run --data="$DATA" --batch_size=abc --metrics_address=
expect_error "max_errors" run --data="$DATA" --max_errors=lots --metrics_address=
expect_error "unknown flag --no_such_flag for flowloader run" run --data="$DATA" --no_such_flag=1
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

# 5. SIGINT (SIGTERM) mid-run: the summary is still written and the exit code is 130
# (143). The signal goes out once the run's /metrics shows delivered samples, not after
# a fixed sleep: on a loaded machine or under TSan a sleep can end before the run has
# started, and the default action then kills it, also with 130, but writes no summary.
# --epochs=0 runs until the signal, so it always lands mid-run.
signal_mid_run() {  # SIGNAL SUMMARY_JSON; prints the run's exit code.
  local err="$TMP/signal_$1.txt"
  "$FLOWLOADER" run --data="$DATA" --epochs=0 --image_size=32 --metrics_address=127.0.0.1:0 \
    --progress=false --summary_json="$2" >/dev/null 2>"$err" &
  local pid=$!
  "$PY" - "$pid" "$err" <<'PYEOF' >&2 || { kill -KILL $pid; return 1; }
import re, sys, time, urllib.request
pid, err = sys.argv[1], sys.argv[2]
deadline = time.time() + 120
while time.time() < deadline:
    with open("/proc/%s/stat" % pid) as f:  # Not reaped yet: the shell waits for it.
        if f.read().rsplit(")", 1)[1].split()[0] == "Z":
            raise SystemExit("the run ended before the signal: " + open(err).read()[-2000:])
    m = re.search(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", open(err).read())
    if m:
        try:
            text = urllib.request.urlopen(m.group(1), timeout=5).read().decode()
            n = re.search(r"^flowloader_samples_total\{[^}]*\} (\S+)$", text, re.M)
            if n and float(n.group(1)) > 0:
                sys.exit(0)
        except OSError:
            pass
    time.sleep(0.05)
raise SystemExit("no samples delivered within 120 s: " + open(err).read()[-2000:])
PYEOF
  kill -"$1" $pid
  set +e; wait $pid; local rc=$?; set -e
  echo $rc
}
rc=$(signal_mid_run INT "$TMP/int.json") || fail "SIGINT run never delivered samples"
[ "$rc" -eq 130 ] || fail "SIGINT exit code $rc, want 130: $(cat "$TMP/signal_INT.txt")"
"$PY" -c "import json; s=json.load(open('$TMP/int.json')); assert s['samples']>0, s"
rc=$(signal_mid_run TERM "$TMP/term.json") || fail "SIGTERM run never delivered samples"
[ "$rc" -eq 143 ] || fail "SIGTERM exit code $rc, want 143: $(cat "$TMP/signal_TERM.txt")"
"$PY" -c "import json; s=json.load(open('$TMP/term.json')); assert s['samples']>0, s"

# 6. Pipeline specs (--spec): data relative to the spec's directory (../data from the
# test's working directory does not exist), every value reaching the pipeline, flags
# given explicitly overriding the spec (also when set to their default), the example
# specs running.
SPEC_DIR="$TMP/specs"
mkdir -p "$SPEC_DIR"
cat >"$SPEC_DIR/run.yaml" <<'SPECEOF'
# A spec the test writes; data is relative to this file.
data: ../data
name: spec_run
batch_size: 8
num_workers: 1
epochs: 2
seed: 7
shuffle: false
transform: eval
image_size: 48
layout: uint8_hwc
on_error: fail
SPECEOF
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
[ ! -e ../data ] || fail "../data exists here; the relative-path check needs it not to"
"$FLOWLOADER" run --spec="$SPEC_DIR/run.yaml" --metrics_address="127.0.0.1:$PORT" \
  --linger_seconds=3 --progress=false --summary_json="$TMP/spec.json" \
  --keys_out="$TMP/spec_keys.txt" >/dev/null 2>"$TMP/spec_err.txt" &
PID=$!
# name is the pipeline label; eval at 48 px as uint8 is 48*48*3 bytes a sample, 120 samples.
"$PY" - "$PORT" <<'PYEOF' || { kill $PID; fail "spec run metrics: $(cat "$TMP/spec_err.txt")"; }
import sys, time, urllib.request
url = "http://127.0.0.1:%s/metrics" % sys.argv[1]
want = 'flowloader_stage_bytes_total{pipeline="spec_run",stage="augment"} %d' % (120 * 48 * 48 * 3)
deadline = time.time() + 20
text = ""
while True:
    try:
        text = urllib.request.urlopen(url, timeout=2).read().decode()
        if want in text:
            break
    except OSError:
        pass
    if time.time() > deadline:
        raise SystemExit("metrics never showed " + want + ": " +
                         " | ".join(l for l in text.split("\n") if "bytes_total" in l))
    time.sleep(0.2)
PYEOF
wait $PID || fail "spec run exited $?: $(cat "$TMP/spec_err.txt")"
"$PY" - "$TMP/spec.json" "$TMP/spec_keys.txt" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert (s["samples"], s["batches"], s["epochs"]) == (120, 16, 2), s   # 60/8: 8 a epoch
assert (s["batch_size"], s["num_workers"], s["skipped"]) == (8, 1, 0), s
keys = open(sys.argv[2]).read().split("\n")[:-1]
assert keys[:60] == sorted(keys[:60]) and keys[:60] == keys[60:], "shuffle: false"
PYEOF

# Flags override: --batch_size=64 is the flag's default and still replaces the spec's 8;
# --shuffle (true, also the default) replaces shuffle: false; the rest stays the spec's.
"$FLOWLOADER" run --spec="$SPEC_DIR/run.yaml" --batch_size=64 --shuffle --metrics_address= \
  --progress=false --summary_json="$TMP/over.json" --keys_out="$TMP/over_keys.txt" \
  >/dev/null 2>"$TMP/over_err.txt" || fail "override run exited $?: $(cat "$TMP/over_err.txt")"
"$PY" - "$TMP/over.json" "$TMP/over_keys.txt" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert (s["batch_size"], s["batches"], s["samples"], s["num_workers"]) == (64, 2, 120, 1), s
keys = open(sys.argv[2]).read().split("\n")[:-1]
assert keys[:60] != sorted(keys[:60]), "--shuffle should override shuffle: false"
PYEOF

# The example specs run (with --data replacing their .sample_data).
"$FLOWLOADER" run --spec=runtime/specs/custom.yaml --data="$DATA" --metrics_address= \
  --progress=false --summary_json="$TMP/custom.json" >/dev/null 2>"$TMP/custom_err.txt" ||
  fail "custom.yaml exited $?: $(cat "$TMP/custom_err.txt")"
"$PY" - "$TMP/custom.json" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
assert (s["samples"], s["batch_size"]) == (60, 32), s
assert "jpeg_decode" in s["stages"] and "decode" not in s["stages"], s["stages"].keys()
PYEOF
"$FLOWLOADER" run --spec=runtime/specs/train.yaml --data="$DATA" --epochs=1 --image_size=32 \
  --metrics_address= --progress=false --summary_json="$TMP/train.json" >/dev/null 2>&1 ||
  fail "train.yaml exited $?"
"$PY" -c "import json; s=json.load(open('$TMP/train.json')); assert (s['samples'], s['epochs']) == (60, 1), s"

# Bad specs: exit 2 with one line naming file:line:column.
printf 'data: ../data\nname: bad\nbatchsize: 8\n' >"$SPEC_DIR/bad.yaml"
expect_error "^flowloader: $SPEC_DIR/bad.yaml:3:1: unknown key 'batchsize' in pipeline (did you mean 'batch_size'?)\$" \
  run --spec="$SPEC_DIR/bad.yaml"
set +e; "$FLOWLOADER" run --spec="$SPEC_DIR/bad.yaml" >/dev/null 2>&1; rc=$?; set -e
[ $rc -eq 2 ] || fail "bad spec exit code $rc, want 2"
printf 'data: ../data\nstages:\n  - type: decode\n    options: {fastidct: true}\n' \
  >"$SPEC_DIR/bad_stage.yaml"
expect_error "bad_stage.yaml:4:15: stage 'decode' has no option 'fastidct' (did you mean 'fast_idct'?)" \
  run --spec="$SPEC_DIR/bad_stage.yaml"
# A stray comma where the document starts: yaml-cpp's LoadAll would loop forever.
printf '# a spec\n, data: ../data\n' >"$SPEC_DIR/comma.yaml"
expect_error "comma.yaml:2:1: invalid YAML: unexpected ','" run --spec="$SPEC_DIR/comma.yaml"
expect_error "missing.yaml: cannot open the spec" run --spec="$SPEC_DIR/missing.yaml"
expect_error "--image_size configures the built-in stages" \
  run --spec=runtime/specs/custom.yaml --data="$DATA" --image_size=64
printf 'batch_size: 8\n' >"$SPEC_DIR/no_data.yaml"
expect_error "required" run --spec="$SPEC_DIR/no_data.yaml"

# `flowloader stages` is a YAML stages list (every option at its default) plus the keys.
"$FLOWLOADER" stages >"$TMP/stages.yaml" || fail "stages exited $?"
"$PY" - "$TMP/stages.yaml" <<'PYEOF'
import sys, yaml
text = open(sys.argv[1]).read()
items = {s["type"]: s for s in yaml.safe_load(text)}
assert {"read", "decode", "augment"} <= set(items), items
assert items["decode"]["options"]["fast_idct"] is False, items["decode"]
assert items["augment"]["options"]["image_size"] == 224, items["augment"]
assert "#   batch_size: 64" in text and "#   shard: {rank: 0, world_size: 1}" in text, text
PYEOF

echo "cli_test: 1 passed, 0 failed"
