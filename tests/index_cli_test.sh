#!/usr/bin/env bash
# index_cli_test.sh: `flowloader index` over patterns naming shards that do not exist
# answers fast and briefly: a brace range of a million missing shards used to take 6-27 s
# and print a line a shard (1,000,000 lines); a 5000-character path was printed whole,
# twice; a list file of two million-shard lines named 2 million shards.
#   1. nothing indexed (a million missing shards): exit 2, one line, within 10 s;
#   2. 3 shards that exist in a range of 2000: they are indexed, at most 6 failure lines
#      (5 named, the rest counted), exit 1, within 10 s;
#   3. a 5000-character path: one line, each value cut (no line over 1000 characters);
#   4. a list file naming two million shards: refused, one line.
set -euo pipefail
FLOWLOADER="$1"
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$FLOWLOADER" make-dataset --out="$TMP/ds" --classes=1 --images_per_class=6 \
  --min_short_side=32 --max_short_side=40 >/dev/null
"$FLOWLOADER" pack --data="$TMP/ds" --out="$TMP/shards" --shard_size=1 >/dev/null 2>&1
ls "$TMP/shards"/train-00000[0-2].tar >/dev/null || fail "pack wrote fewer than 3 shards"
rm -f "$TMP/shards"/*.idx

# index_case NAME RC MAX_LINES -- FLAGS...: exit RC within 10 s, at most MAX_LINES lines on
# stderr (info logs aside), none over 1000 characters.
index_case() {
  local name="$1" want_rc="$2" max_lines="$3"; shift 4
  local rc=0 start end
  start=$(date +%s)
  timeout -s KILL 10 "$FLOWLOADER" index "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" || rc=$?
  end=$(date +%s)
  [ "$rc" = "$want_rc" ] || fail "$name: exit $rc, expected $want_rc: $(head -c 600 "$TMP/$name.err")"
  grep -v '^flowloader: I ' "$TMP/$name.err" >"$TMP/$name.msg" || true
  local lines
  lines=$(wc -l <"$TMP/$name.msg")
  [ "$lines" -le "$max_lines" ] || fail "$name: $lines lines on stderr: $(head -c 600 "$TMP/$name.msg")"
  awk 'length($0) > 1000 { exit 1 }' "$TMP/$name.msg" || fail "$name: a line over 1000 characters"
  echo "$name: exit $rc in $((end - start)) s, $lines line(s): $(head -c 300 "$TMP/$name.msg")"
}
index_case million_missing 2 1 -- --data="$TMP/nowhere/x-{000000..999999}.tar"
grep -q "no index written" "$TMP/million_missing.msg" || fail "million_missing: $(cat "$TMP/million_missing.msg")"
grep -q "not tried" "$TMP/million_missing.msg" || fail "million_missing: not stopped early"

index_case range_past_the_shards 1 6 -- --data="$TMP/shards/train-{000000..001999}.tar"
for i in 0 1 2; do
  [ -s "$TMP/shards/train-00000$i.tar.idx" ] || fail "range_past_the_shards: shard $i not indexed"
done
grep -q "more shard(s) without an index" "$TMP/range_past_the_shards.msg" ||
  fail "range_past_the_shards: the rest not counted"

long="$TMP/$(printf 'a%.0s' $(seq 1 5000)).tar"
index_case long_path 2 1 -- --data="$long"

for p in x y; do echo "$p-{000000..999999}.tar"; done >"$TMP/two_million.txt"
index_case list_of_two_million 2 1 -- --data="$TMP/two_million.txt"
grep -q "names more than 1000000 shards" "$TMP/list_of_two_million.msg" ||
  fail "list_of_two_million: $(cat "$TMP/list_of_two_million.msg")"
echo "index_cli_test: 4 passed"
