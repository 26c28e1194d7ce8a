#!/usr/bin/env bash
# graph_cli_test.sh: `flowloader graph` prints the planned per-sample graph of a spec (the
# stages with the fields their ports are bound to, and the batch tensors with their
# per-sample shape), as text or as DOT with --dot; a graph Create would refuse exits 2
# with its one line, at the spec's file:line:column, and prints nothing on stdout.
set -euo pipefail
FLOWLOADER="$1"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. The built-in stages: read -> decode -> augment into the batch tensor `output`.
"$FLOWLOADER" graph >"$TMP/default.txt" 2>"$TMP/default.err" ||
  fail "graph exited $?: $(cat "$TMP/default.err")"
grep -qE '^  decode +reads bytes \(bytes\); writes image \(image\)$' "$TMP/default.txt" ||
  fail "no decode line: $(cat "$TMP/default.txt")"
grep -qE '^  output  \[3, 224, 224\] float32  \(written by augment\)$' "$TMP/default.txt" ||
  fail "no batch tensor line: $(cat "$TMP/default.txt")"

# 2. A spec binding ports to other names: the names and the tensor's layout follow.
cat >"$TMP/views.yaml" <<'YAML'
stages:
  - type: read
  - type: decode
    name: jpeg
    outputs: [pixels]
  - type: augment
    inputs: [pixels]
    outputs: [view0]
    options: {image_size: 96, layout: uint8_hwc}
YAML
"$FLOWLOADER" graph --spec="$TMP/views.yaml" >"$TMP/views.txt" 2>"$TMP/views.err" ||
  fail "graph --spec exited $?: $(cat "$TMP/views.err")"
grep -qE '^  jpeg \(decode\) +reads bytes \(bytes\); writes pixels \(image\)$' "$TMP/views.txt" ||
  fail "no bound decode line: $(cat "$TMP/views.txt")"
grep -qE '^  augment +reads pixels \(image\); writes view0 \(tensor\)$' "$TMP/views.txt" ||
  fail "no bound augment line: $(cat "$TMP/views.txt")"
grep -qE '^  view0  \[96, 96, 3\] uint8  \(written by augment\)$' "$TMP/views.txt" ||
  fail "no view0 tensor: $(cat "$TMP/views.txt")"

# 3. --dot: the same graph as Graphviz DOT, edges through the fields to the batch.
"$FLOWLOADER" graph --spec="$TMP/views.yaml" --dot >"$TMP/views.dot"
head -1 "$TMP/views.dot" | grep -qx 'digraph flowloader {' || fail "not DOT: $(cat "$TMP/views.dot")"
tail -1 "$TMP/views.dot" | grep -qx '}' || fail "DOT not closed"
for edge in '"stage:jpeg" -> "field:pixels";' '"field:pixels" -> "stage:augment";' \
    '"field:view0" -> batch \[label="\[96, 96, 3\] uint8"\];' \
    '"stage:jpeg" \[shape=box, label="jpeg\\n\(decode\)"\];'; do
  grep -qE "^  $edge\$" "$TMP/views.dot" || fail "no '$edge' in: $(cat "$TMP/views.dot")"
done
if command -v dot >/dev/null; then dot -Tsvg "$TMP/views.dot" >/dev/null || fail "dot refused it"; fi

# 4. Several views: one decode, an augment bound to two views and a second augment
# branch; one batch tensor per view, in order.
cat >"$TMP/multi.yaml" <<'YAML'
stages:
  - type: read
  - type: decode
  - type: augment
    outputs: [view0, view1]
  - type: augment
    name: small
    outputs: [small]
    options: {image_size: 96, layout: uint8_hwc}
YAML
"$FLOWLOADER" graph --spec="$TMP/multi.yaml" >"$TMP/multi.txt" 2>"$TMP/multi.err" ||
  fail "graph of two views exited $?: $(cat "$TMP/multi.err")"
grep -qE '^  augment +reads image \(image\); writes view0 \(tensor\), view1 \(tensor\)$' \
  "$TMP/multi.txt" || fail "no two-view augment line: $(cat "$TMP/multi.txt")"
grep -qE '^  small \(augment\) +reads image \(image\); writes small \(tensor\)$' \
  "$TMP/multi.txt" || fail "no second branch: $(cat "$TMP/multi.txt")"
[[ "$(sed -n '/^batch tensors:/,$p' "$TMP/multi.txt")" == "batch tensors:
  view0  [3, 224, 224] float32  (written by augment)
  view1  [3, 224, 224] float32  (written by augment)
  small  [96, 96, 3] uint8  (written by small)" ]] || fail "batch tensors: $(cat "$TMP/multi.txt")"

# 5. Refusals: one line at the binding's location, exit 2, nothing on stdout.
expect_refusal() {  # NAME EXPECTED_LINE, the spec on stdin
  cat >"$TMP/$1.yaml"
  local rc=0
  "$FLOWLOADER" graph --spec="$TMP/$1.yaml" >"$TMP/$1.out" 2>"$TMP/$1.err" || rc=$?
  [[ $rc -eq 2 ]] || fail "$1: exit $rc, want 2"
  [[ ! -s "$TMP/$1.out" ]] || fail "$1: printed $(cat "$TMP/$1.out")"
  [[ "$(cat "$TMP/$1.err")" == "flowloader: $TMP/$1.yaml:$2" ]] ||
    fail "$1: got '$(cat "$TMP/$1.err")', want '$2'"
}
expect_refusal unknown "5:14: stage 'augment' reads 'nope', which no stage writes (image \
fields written before it: image): bind its input 'image' to one of those" <<'YAML'
stages:
  - type: read
  - type: decode
  - type: augment
    inputs: [nope]
YAML
expect_refusal kind "4:14: stage 'augment' input 'image' needs a field of kind image, but \
'bytes' (written by 'read') is bytes (no image field is written before it)" <<'YAML'
stages:
  - type: read
  - type: augment
    inputs: [bytes]
YAML
expect_refusal twice "6:15: stages 'a' (augment) and 'b' (augment) both write the batch \
tensor 'view': each batch tensor has one writer; bind one of them to another name \
(\`outputs: [view_2]\`)" <<'YAML'
stages:
  - {type: read}
  - {type: decode}
  - {type: augment, name: a, outputs: [view]}
  - type: augment
    outputs: [view]
    name: b
YAML
echo PASS
