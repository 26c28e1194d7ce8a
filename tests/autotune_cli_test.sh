#!/usr/bin/env bash
# autotune_cli_test.sh: `flowloader run --num_workers=auto --prefetch_batches=auto` end to
# end on a small dataset it makes: the summary's "autotune" object, the values the run
# prints it settled on, the --report_every lines naming each change, a spec's
# `num_workers: auto`, and the one-line refusals of bad values. Not a measurement:
# tests/benchmarks/autotune_bench.py measures the targets.
set -euo pipefail
FLOWLOADER="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=2 --images_per_class=30 \
  --min_short_side=48 --max_short_side=64 >/dev/null
R=(--data="$DATA" --image_size=32 --batch_size=4 --metrics_address= --progress=false)

# Enough epochs for several 0.2 s windows; the consumer takes 2 ms a batch.
"$FLOWLOADER" run "${R[@]}" --num_workers=auto --prefetch_batches=auto --cpu_budget=2 \
  --epochs=40 --consumer_ms=2 --report_every=0.3 --summary_json="$TMP/auto.json" \
  >"$TMP/out.txt" 2>"$TMP/err.txt" || fail "auto run exited $?: $(cat "$TMP/err.txt")"
grep -q "^autotune settled on num_workers [12], prefetch_batches [0-9]* ([0-9]* changes)$" \
  "$TMP/out.txt" || fail "no settled values: $(cat "$TMP/out.txt")"
"$PY" - "$TMP/auto.json" "$TMP/err.txt" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
a = s["autotune"]
assert set(a) == {"num_workers", "prefetch_batches", "decisions"}, a
assert 1 <= a["num_workers"] <= 2 and a["prefetch_batches"] >= 1, a
assert s["num_workers"] == a["num_workers"], (s["num_workers"], a)
for d in a["decisions"]:
    assert set(d) == {"seconds", "knob", "from", "to", "reason"}, d
    assert d["knob"] in ("num_workers", "prefetch_batches") and d["from"] != d["to"], d
    assert d["seconds"] >= 0 and d["reason"], d
# Each change is named on stderr by a --report_every line (the last ones may come after
# the last report).
err = open(sys.argv[2]).read()
lines = [l for l in err.splitlines() if l.startswith("autotune: at ")]
for d, line in zip(a["decisions"], lines):
    assert f"{d['knob']} {d['from']} -> {d['to']}" in line, (d, line)
PYEOF

# A fixed run has no "autotune" object and prints no settled values.
"$FLOWLOADER" run "${R[@]}" --num_workers=2 --prefetch_batches=3 --summary_json="$TMP/fixed.json" \
  >"$TMP/fixed.txt" 2>/dev/null || fail "fixed run exited $?"
"$PY" -c "import json; assert 'autotune' not in json.load(open('$TMP/fixed.json'))"
! grep -q "^autotune" "$TMP/fixed.txt" || fail "a fixed run printed autotune values"

# A spec's num_workers: auto.
printf 'data: %s\nimage_size: 32\nbatch_size: 4\nnum_workers: auto\ncpu_budget: 1\n' "$DATA" \
  >"$TMP/auto.yaml"
"$FLOWLOADER" run --spec="$TMP/auto.yaml" --metrics_address= --progress=false \
  --summary_json="$TMP/spec.json" >/dev/null 2>&1 || fail "spec with num_workers: auto"
"$PY" -c "import json; a=json.load(open('$TMP/spec.json'))['autotune']; assert a['num_workers']==1, a"

# Refusals: exit 2, one line naming the knob.
expect2() {
  set +e; "$FLOWLOADER" "$@" >/dev/null 2>"$TMP/e"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "'$*' exited $rc: $(cat "$TMP/e")"
  # One line besides the "I" (information) log lines.
  [ "$(grep -vc '^flowloader: I ' "$TMP/e")" -eq 1 ] || fail "'$*': not one line: $(cat "$TMP/e")"
  grep -q -- "$WANT" "$TMP/e" || fail "'$*': expected '$WANT' in $(cat "$TMP/e")"
}
WANT="--num_workers must be an integer, got 'lots'" expect2 run "${R[@]}" --num_workers=lots
WANT="--prefetch_batches must be >= 1, got 0" expect2 run "${R[@]}" --prefetch_batches=0
WANT="--cpu_budget" expect2 run "${R[@]}" --num_workers=auto --cpu_budget=-1
WANT="--ram_budget must be bytes" expect2 run "${R[@]}" --prefetch_batches=auto --ram_budget=lots
WANT="ram_budget 1.0 MiB is below one batch buffer's plan (.*): raise ram_budget or lower max_decode_mb" expect2 run "${R[@]}" \
  --prefetch_batches=auto --ram_budget=1MiB
# prefetch_batches=auto under a memory_limit_mb that one batch buffer fits and two do not:
# it runs with one (it started at two whatever the limit, and was refused). The plans are
# made under a limit (any), which adds the workers' sample room.
plan_mb() {
  "$FLOWLOADER" plan --data="$DATA" --image_size=512 --batch_size=4 --num_workers=2 \
    --prefetch_batches="$1" --memory_limit_mb=1048576 --json | "$PY" -c "import json,sys; print(json.load(sys.stdin)['total_bytes'] / 2**20)"
}
LIMIT=$("$PY" -c "print(int(48 + ($(plan_mb 1) + $(plan_mb 2)) / 2))")
"$FLOWLOADER" run --data="$DATA" --image_size=512 --batch_size=4 --num_workers=2 \
  --prefetch_batches=auto --memory_limit_mb="$LIMIT" --epochs=1 --metrics_address= \
  --progress=false --summary_json="$TMP/one.json" >/dev/null 2>"$TMP/one.err" \
  || fail "prefetch_batches=auto under memory_limit_mb $LIMIT exited $?: $(cat "$TMP/one.err")"
"$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['samples'] == 60 and s['autotune']['prefetch_batches'] == 1, s" \
  "$TMP/one.json" || fail "not one buffer: $(cat "$TMP/one.json")"

# The same with soft labels of 4 million classes (64 MiB a buffer of 4 rows, beside 48 KiB
# of pixels): a buffer's labels count as its pixels do (auto took two buffers, refused).
spec_labels() {
  printf 'data: %s\nimage_size: 32\nbatch_size: 4\nnum_workers: 2\nprefetch_batches: %s\n' \
    "$DATA" "$1"
  printf 'batch_ops:\n  - type: label_smoothing\n    options: {smoothing: 0.1, num_classes: 4000000}\n'
}
spec_labels 1 >"$TMP/labels1.yaml"
spec_labels 2 >"$TMP/labels2.yaml"
spec_labels auto >"$TMP/labels_auto.yaml"
spec_mb() {
  "$FLOWLOADER" plan --spec="$1" --memory_limit_mb=1048576 --json \
    | "$PY" -c "import json,sys; print(json.load(sys.stdin)['total_bytes'] / 2**20)"
}
LIMIT=$("$PY" -c "print(int(48 + ($(spec_mb "$TMP/labels1.yaml") + $(spec_mb "$TMP/labels2.yaml")) / 2))")
"$FLOWLOADER" run --spec="$TMP/labels_auto.yaml" --memory_limit_mb="$LIMIT" --epochs=1 \
  --metrics_address= --progress=false --summary_json="$TMP/labels.json" >/dev/null \
  2>"$TMP/labels.err" \
  || fail "soft labels, prefetch_batches=auto under memory_limit_mb $LIMIT exited $?: $(cat "$TMP/labels.err")"
"$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['samples'] == 60 and s['autotune']['prefetch_batches'] == 1, s" \
  "$TMP/labels.json" || fail "not one buffer: $(cat "$TMP/labels.json")"

# A memory_limit_mb that not even one buffer fits is what the refusal names, not the unset
# ram_budget's default (half of MemAvailable), which the 180 GiB buffer passed too.
WANT="the batch pool needs 180.0 GiB (prefetch 1 × .*) but 52.0 MiB is available (memory_limit_mb 100.0 MiB less 48.0 MiB the process holds itself): lower batch_size" \
  expect2 run "${R[@]}" --prefetch_batches=auto --image_size=16384 --batch_size=64 \
  --memory_limit_mb=100
# num_workers=auto with cpu_budget 8 under memory_limit_mb 128: eight workers' codec
# memory and sample room do not fit beside a batch of 60 (refused at Create before);
# auto takes the most workers that fit, logged, and delivers every sample.
"$FLOWLOADER" run --data="$DATA" --batch_size=64 --num_workers=auto --cpu_budget=8 \
  --memory_limit_mb=128 --epochs=1 --metrics_address= --progress=false \
  --summary_json="$TMP/capped.json" >/dev/null 2>"$TMP/capped.err" \
  || fail "num_workers=auto, cpu_budget 8 under memory_limit_mb 128 exited $?: $(cat "$TMP/capped.err")"
grep -q "num_workers auto: at most [1-7] of 8 workers fit memory_limit_mb" "$TMP/capped.err" \
  || fail "auto workers were not capped: $(cat "$TMP/capped.err")"
"$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['samples'] == 60 and s['autotune']['num_workers'] < 8, s" \
  "$TMP/capped.json" || fail "capped run: $(cat "$TMP/capped.json")"
printf 'data: %s\nnum_workers: many\n' "$DATA" >"$TMP/bad.yaml"
WANT="bad.yaml:2:14: num_workers must be an integer, got 'many'" expect2 run --spec="$TMP/bad.yaml"
# A ram_budget below one buffer names the plan's total and largest part, not all six
# parts (a 650-character line).
WANT="ram_budget 1.0 MiB is below one batch buffer's plan (.* MiB; largest: codec memory .*): raise ram_budget or lower max_decode_mb (flowloader plan lists every part)" \
  expect2 run "${R[@]}" --prefetch_batches=auto --ram_budget=1MiB
[ "$(grep -v '^flowloader: I ' "$TMP/e" | wc -c)" -le 400 ] || fail "ram_budget refusal: $(cat "$TMP/e")"

echo "autotune_cli_test: 1 passed, 0 failed"
