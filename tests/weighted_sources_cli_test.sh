#!/usr/bin/env bash
# weighted_sources_cli_test.sh: `flowloader run --spec` with `sources:` mixes two
# ImageFolders by weight: the summary JSON counts each source's samples (exact shares of
# epoch_samples, also when --epoch_samples overrides the spec), --samples_out's source
# column agrees row by row, the delivery is the same for 1 and 2 workers, and a spec with
# both data: and sources: is refused in one line.
set -euo pipefail
FLOWLOADER="$1"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$TMP/a" --classes=3 --images_per_class=10 \
  --min_short_side=48 --max_short_side=64 >/dev/null
"$FLOWLOADER" make-dataset --out="$TMP/b" --classes=2 --images_per_class=5 \
  --min_short_side=48 --max_short_side=64 >/dev/null
cat >"$TMP/mix.yaml" <<'YAML'
sources:
  - {name: big, data: a, weight: 1}
  - {name: small, data: b, weight: 3}
batch_size: 16
image_size: 32
device: cpu
YAML

# run NAME FLAGS...: writes $TMP/NAME.json and $TMP/NAME.tsv.
run() {
  local name="$1"; shift
  "$FLOWLOADER" run --spec="$TMP/mix.yaml" --metrics_address= --progress=false \
    --summary_json="$TMP/$name.json" --samples_out="$TMP/$name.tsv" "$@" \
    >"$TMP/$name.out" 2>"$TMP/$name.err" || fail "run $name: $(cat "$TMP/$name.err")"
}
run one --num_workers=1 --epochs=2
run two --num_workers=2 --epochs=2
run long --epoch_samples=1000

"$PY" - "$TMP" <<'PYEOF'
import collections, json, sys
tmp = sys.argv[1]
def rows(name):
    lines = open("%s/%s.tsv" % (tmp, name)).read().split("\n")
    assert lines[0] == "epoch\tbatch\tkey\tlabel\tsource", lines[0]
    return [l.split("\t") for l in lines[1:-1]]
one, two = rows("one"), rows("two")
assert one == two, "1 and 2 workers delivered different samples"
# 40 samples an epoch (30 + 10): 10 from big, 30 from small, in each of 2 epochs.
for epoch in ("0", "1"):
    counts = collections.Counter(r[4] for r in one if r[0] == epoch)
    assert counts == {"big": 10, "small": 30}, (epoch, counts)
assert json.load(open(tmp + "/one.json"))["sources"] == {"big": 20, "small": 60}
long = json.load(open(tmp + "/long.json"))
assert long["samples"] == 1000 and long["sources"] == {"big": 250, "small": 750}, long["sources"]
assert collections.Counter(r[4] for r in rows("long")) == {"big": 250, "small": 750}
PYEOF

printf 'data: a\n' >>"$TMP/mix.yaml"
set +e
"$FLOWLOADER" run --spec="$TMP/mix.yaml" --metrics_address= --progress=false >"$TMP/both.out" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "data: and sources: together exited $rc: $(cat "$TMP/both.out")"
grep -q "and sources are both set: give one of them" "$TMP/both.out" ||
  fail "no one-line refusal: $(cat "$TMP/both.out")"
echo PASS
