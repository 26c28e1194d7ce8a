#!/usr/bin/env bash
# tune_cli_test.sh: `flowloader tune` end to end on a small dataset it makes: the three
# files it writes (tune.json's fields, best.yaml that `run --spec` runs as it is, tune.svg
# that parses as SVG), the CPU budget under `taskset -c 0`, the consumer goal's batch
# size, a 100 MiB RAM budget over 2000 files, and its one-line refusals. Not a measurement: trials are short and the machine
# may be busy; tests/benchmarks/tune_bench.py measures the targets.
set -euo pipefail
FLOWLOADER="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"  # Absolute: a check runs from /.
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=2 --images_per_class=20 \
  --min_short_side=48 --max_short_side=64 >/dev/null
T=(--data="$DATA" --image_size=32 --trial_seconds=0.2)

"$FLOWLOADER" tune "${T[@]}" --out="$TMP/t" --time_budget=20 --batch_sizes=8,16 \
  >"$TMP/out.txt" 2>"$TMP/err.txt" || fail "tune exited $?: $(cat "$TMP/err.txt")"
grep -q "^best: num_workers [0-9]*, batch_size \(8\|16\), prefetch_batches" "$TMP/out.txt" ||
  fail "no recommendation: $(cat "$TMP/out.txt")"
grep -q "^  num_workers [0-9]*: " "$TMP/out.txt" && grep -q "^  batch_size " "$TMP/out.txt" ||
  fail "no reason per knob: $(cat "$TMP/out.txt")"
"$PY" - "$TMP/t" <<'PYEOF'
import json, os, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
r = json.load(open(os.path.join(d, "tune.json")))
fields = {"num_workers", "batch_size", "prefetch_batches", "images_per_second", "cpu_cores",
          "peak_rss_bytes", "consumer_wait_fraction"}
assert fields <= set(r["best"]), r["best"]
assert r["trials"] and all(fields | {"seconds"} <= set(t) for t in r["trials"]), r["trials"]
assert r["budgets"]["cpu"] >= 1 and r["budgets"]["ram_bytes"] > 0 and r["grid"] is False, r
assert all(t["batch_size"] in (8, 16) for t in r["trials"])
assert all(1 <= t["num_workers"] <= 2 * r["budgets"]["cpu"] for t in r["trials"])
assert r["best"]["images_per_second"] > 0 and r["best"]["peak_rss_bytes"] > 0
assert r["best"] in [{k: t[k] for k in fields} for t in r["trials"]], "best is a trial"
svg = ET.parse(os.path.join(d, "tune.svg")).getroot()
assert svg.tag.endswith("svg"), svg.tag
text = "".join(svg.itertext())
assert "num_workers" in text and "images/s" in text, text[:200]
PYEOF
# best.yaml runs as it is, from another directory, with what tune chose.
(cd / && "$FLOWLOADER" run --spec="$TMP/t/best.yaml" --metrics_address= --progress=false \
  --summary_json="$TMP/best_run.json" >/dev/null 2>"$TMP/best_err.txt") ||
  fail "best.yaml does not run: $(cat "$TMP/best_err.txt")"
"$PY" - "$TMP/t/tune.json" "$TMP/best_run.json" <<'PYEOF'
import json, sys
best = json.load(open(sys.argv[1]))["best"]
run = json.load(open(sys.argv[2]))
assert (run["num_workers"], run["batch_size"], run["samples"]) == (
    best["num_workers"], best["batch_size"], 40), (run, best)
PYEOF

# The CPU budget is what the process may use: one CPU under taskset.
taskset -c 0 "$FLOWLOADER" tune "${T[@]}" --out="$TMP/one" --time_budget=3 --batch_sizes=16 \
  >/dev/null 2>&1 || fail "tune under taskset exited $?"
"$PY" -c "import json,sys; r=json.load(open('$TMP/one/tune.json')); assert r['budgets']['cpu']==1, r['budgets']; assert max(t['num_workers'] for t in r['trials'])<=2"

# With a consumer, the batch size is the consumer's.
"$FLOWLOADER" tune "${T[@]}" --out="$TMP/c" --time_budget=5 --consumer_ms=5 --batch_size=4 \
  >/dev/null 2>&1 || fail "consumer tune exited $?"
"$PY" -c "import json; r=json.load(open('$TMP/c/tune.json')); assert {t['batch_size'] for t in r['trials']}=={4}, r['trials']"

# The issue's scale: 2000 files under --ram_budget=100MiB. The plan counts 8 KiB of seek
# index per file whatever its size (15.6 MiB here), so small images give the same plan as
# ImageNet-sized ones in a fraction of the time; the seek index and prefetch shrink to fit
# before a configuration is refused, and no measured trial goes over the budget. Not
# under a sanitizer: its shadow memory is most of a 100 MiB budget by itself.
if grep -qa -e __asan_init -e __tsan_init "$FLOWLOADER"; then
  echo "tune_cli_test: the 100 MiB budget part skipped (sanitized build)"
else
"$FLOWLOADER" make-dataset --out="$TMP/many" --classes=10 --images_per_class=200 \
  --min_short_side=64 --max_short_side=96 >/dev/null
"$FLOWLOADER" tune --data="$TMP/many" --out="$TMP/budget" --ram_budget=100MiB --time_budget=8 \
  --trial_seconds=0.3 >/dev/null 2>"$TMP/budget_err.txt" ||
  fail "tune --ram_budget=100MiB on 2000 files exited $?: $(cat "$TMP/budget_err.txt")"
"$PY" - "$TMP/budget/tune.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["budgets"]["ram_bytes"] == 100 << 20, r["budgets"]
assert r["trials"], "no configuration was measured"
over = [t for t in r["trials"] if t["peak_rss_bytes"] > r["budgets"]["ram_bytes"]]
assert not over, f"trials over the 100 MiB budget: {over}"
PYEOF
fi

# Refusals: one line, exit 2.
expect2() {
  set +e; "$FLOWLOADER" "$@" >/dev/null 2>"$TMP/e"; local rc=$?; set -e
  [ $rc -eq 2 ] || fail "'$*' exited $rc: $(cat "$TMP/e")"
  grep -q -- "$WANT" "$TMP/e" || fail "'$*': expected '$WANT' in $(cat "$TMP/e")"
}
WANT="--ram_budget must be bytes" expect2 tune "${T[@]}" --out="$TMP/x" --ram_budget=lots
WANT="--batch_sizes must be integers >= 1" expect2 tune "${T[@]}" --out="$TMP/x" --batch_sizes=8,0
WANT="tune needs --out=DIR" expect2 tune "${T[@]}"
WANT="no configuration could be measured: it would need .*; largest: .*ram_budget (flowloader plan lists every part)" \
  expect2 tune "${T[@]}" --out="$TMP/x" --ram_budget=1MiB --time_budget=5
# The largest part, not the whole plan (a 715-character line).
[ "$(wc -c <"$TMP/e")" -le 400 ] || fail "tune's ram_budget refusal: $(cat "$TMP/e")"
# --out is checked before the trials (/dev/null was refused after the whole time budget).
: >"$TMP/a_file"
WANT="^flowloader: --out=$TMP/a_file is not a directory" expect2 tune "${T[@]}" --out="$TMP/a_file"

echo "tune_cli_test: 1 passed, 0 failed"
