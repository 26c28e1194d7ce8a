#!/usr/bin/env bash
# load_spec_test.sh: runs examples/load_spec (docs/specs.md) on a spec and a
# dataset it makes: the spec's values reach the pipeline (batch size, image size, a data
# path relative to the spec's directory), and a spec error is the one-line
# FILE:LINE:COLUMN message the snippet passes through.
set -euo pipefail
LOAD_SPEC="$1"
FLOWLOADER="$2"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$TMP/specs"
"$FLOWLOADER" make-dataset --out="$TMP/data" --classes=2 --images_per_class=5 \
  --min_short_side=64 --max_short_side=96 >/dev/null

cat >"$TMP/specs/small.yaml" <<'YAML'
data: ../data
batch_size: 4
epochs: 2
transform: eval
image_size: 32
YAML
"$LOAD_SPEC" "$TMP/specs/small.yaml" >"$TMP/out.txt" 2>"$TMP/err.txt" \
  || fail "load_spec exited $?: $(cat "$TMP/err.txt")"
grep -qxF "total 6 batches 20 samples" "$TMP/out.txt" || fail "totals: $(cat "$TMP/out.txt")"
[ "$(grep -c 'shape=\[4,3,32,32\]' "$TMP/out.txt")" -eq 4 ] || fail "shapes: $(cat "$TMP/out.txt")"
[ "$(grep -c 'shape=\[2,3,32,32\]' "$TMP/out.txt")" -eq 2 ] || fail "shapes: $(cat "$TMP/out.txt")"

printf 'data: ../data\nbatchsize: 4\n' >"$TMP/specs/typo.yaml"
rc=0
"$LOAD_SPEC" "$TMP/specs/typo.yaml" >/dev/null 2>"$TMP/err.txt" || rc=$?
[ "$rc" -eq 1 ] || fail "a spec with an unknown key exited $rc, want 1"
grep -qF "typo.yaml:2:1: unknown key 'batchsize'" "$TMP/err.txt" \
  || fail "error: $(cat "$TMP/err.txt")"
echo PASS
