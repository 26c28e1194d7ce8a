#!/usr/bin/env bash
# batch_ops_cli_test.sh: batch_ops from the CLI: `flowloader stages` lists the batch stage
# types under batch_ops:, `flowloader graph` shows a spec's batch ops and the soft label
# tensor, a run's summary carries the label tensor's shape and dtype and its memory plan
# the label rows, and a bad option or a per-sample type is refused in one line at the
# spec's file:line:column (exit 2). The default run's checksum does not depend on any of
# it (checksum_cli_test and tests/batch_ops_test cover that).
set -euo pipefail
FLOWLOADER="$1"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$DATA" --classes=4 --images_per_class=6 \
  --min_short_side=48 --max_short_side=64 >/dev/null

# 1. stages: the batch types, commented, under batch_ops:.
"$FLOWLOADER" stages >"$TMP/stages.txt"
grep -q '^# batch_ops:$' "$TMP/stages.txt" || fail "no batch_ops: list: $(cat "$TMP/stages.txt")"
grep -q '^# - type: mixup_cutmix$' "$TMP/stages.txt" || fail "no mixup_cutmix in stages"
grep -q '^# - type: label_smoothing$' "$TMP/stages.txt" || fail "no label_smoothing in stages"
if grep -q '^- type: mixup_cutmix' "$TMP/stages.txt"; then fail "mixup_cutmix among stages"; fi

# 2. graph: the batch ops and the label tensor.
cat >"$TMP/mix.yaml" <<YAML
data: $DATA
batch_size: 4
epochs: 1
image_size: 16
batch_ops:
  - type: mixup_cutmix
    options: {mixup_alpha: 0.8, cutmix_alpha: 1.0, label_smoothing: 0.1}
YAML
"$FLOWLOADER" graph --spec="$TMP/mix.yaml" >"$TMP/graph.txt" || fail "graph exited $?"
grep -qE '^  mixup_cutmix +cutmix_alpha=1.0, label_smoothing=0.1, mixup_alpha=0.8$' \
  "$TMP/graph.txt" || fail "no batch op line: $(cat "$TMP/graph.txt")"
grep -q "^label: float32 \[N, the data's classes\] soft targets$" "$TMP/graph.txt" ||
  fail "no label line: $(cat "$TMP/graph.txt")"
# Into a file, not `| grep -q`: under pipefail the writer's SIGPIPE would fail the test.
"$FLOWLOADER" graph --spec="$TMP/mix.yaml" --dot >"$TMP/graph.dot"
grep -q '"batch_op:mixup_cutmix"' "$TMP/graph.dot" || fail "no batch op node in --dot"

# 3. run: outputs.label is float32 [4], the memory plan counts 4 floats a row.
"$FLOWLOADER" run --spec="$TMP/mix.yaml" --metrics_address= --progress=false \
  --summary_json="$TMP/mix.json" >/dev/null 2>"$TMP/mix.err" || fail "run: $(cat "$TMP/mix.err")"
field() { "$PY" -c "import json,sys; s=json.load(open(sys.argv[1])); print($2)" "$TMP/$1.json"; }
[ "$(field mix 's["outputs"]["label"]')" = "{'shape': [4], 'dtype': 'float32'}" ] ||
  fail "outputs.label: $(field mix 's["outputs"]')"
prefetch=$(field mix 's["memory_plan"]["batch_pool_bytes"] // (4 * 3 * 16 * 16 * 4)')
[ "$(field mix 's["memory_plan"]["batch_labels_bytes"]')" = "$((prefetch * 4 * 16))" ] ||
  fail "batch_labels_bytes: $(field mix 's["memory_plan"]')"

# 4. Refusals: one line on stderr at the item's or the value's place, exit 2.
refused() {  # refused NAME WANT: the run of $TMP/NAME.yaml exits 2 with WANT on stderr.
  set +e
  "$FLOWLOADER" run --spec="$TMP/$1.yaml" --metrics_address= --progress=false \
    >/dev/null 2>"$TMP/$1.err"
  local rc=$?
  set -e
  [ "$rc" = 2 ] || fail "$1 exited $rc: $(cat "$TMP/$1.err")"
  grep -qF "$2" "$TMP/$1.err" || fail "$1: $(cat "$TMP/$1.err")"
  [ "$(grep -c "$TMP/$1.yaml" "$TMP/$1.err")" = 1 ] || fail "$1: not one line"
}
printf 'data: %s\nbatch_ops:\n  - type: mixup_cutmix\n    options: {mixup_alpha: -1}\n' \
  "$DATA" >"$TMP/alpha.yaml"
refused alpha "alpha.yaml:3:5: batch op 'mixup_cutmix': option 'mixup_alpha' must be >= 0, got -1"
printf 'data: %s\nbatch_ops:\n  - type: augment\n' "$DATA" >"$TMP/per_sample.yaml"
refused per_sample "per_sample.yaml:3:11: 'augment' is a per-sample stage"

# 5. repeated_augment: --samples_out has a copy column, each key three times in a row.
"$FLOWLOADER" make-dataset --out="$TMP/many" --classes=2 --images_per_class=130 \
  --min_short_side=32 --max_short_side=40 >/dev/null
"$FLOWLOADER" run --data="$TMP/many" --repeated_augment=3 --batch_size=16 --image_size=16 \
  --epochs=1 --metrics_address= --progress=false --samples_out="$TMP/samples.tsv" \
  >/dev/null 2>"$TMP/ra.err" || fail "repeated_augment run: $(cat "$TMP/ra.err")"
[ "$(head -1 "$TMP/samples.tsv")" = "$(printf 'epoch\tbatch\tkey\tlabel\tsource\tcopy')" ] ||
  fail "samples_out header: $(head -1 "$TMP/samples.tsv")"
"$PY" - "$TMP/samples.tsv" <<'PY' || fail "samples_out copies"
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
assert len(rows) == 256, len(rows)  # floor(260 // 256 * 256).
for i, r in enumerate(rows):
    assert r[5] == str(i % 3), (i, r)
    assert r[2] == rows[i - i % 3][2], (i, r)
PY
echo PASS
