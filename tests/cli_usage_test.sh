#!/usr/bin/env bash
# cli_usage_test.sh: the command line's habits (issue "a new user's first hour"): --help
# and --version, per-subcommand flags, values refused before the run, exit code 3 for a
# run that delivers nothing, --samples_out with escaped keys, and resuming an interrupted
# run from the checkpoint it printed. CLI_DOC is docs/cli.md: its flag reference must be
# exactly `run --help`, and its prose must name every flag `run --help` lists (and no flag
# run does not have).
set -euo pipefail
FLOWLOADER="$1"
CLI_DOC="$2"
PY=/usr/bin/python3
TMP="${TEST_TMPDIR:-$(mktemp -d)}"
DATA="$TMP/data"
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect CODE TEXT ARGS...: exits CODE and prints TEXT (a grep pattern) on stderr as its
# one error line (info and warning log lines aside).
expect() {
  local want_rc="$1" want="$2"; shift 2
  set +e
  "$FLOWLOADER" "$@" >"$TMP/o" 2>"$TMP/e"
  local rc=$?
  set -e
  [ $rc -eq "$want_rc" ] || fail "'$*' exited $rc, want $want_rc: $(cat "$TMP/e")"
  grep -q -- "$want" "$TMP/e" || fail "'$*': expected '$want' in: $(cat "$TMP/e")"
  [ "$(grep -v '^flowloader: [IW] ' "$TMP/e" | grep -c .)" -eq 1 ] ||
    fail "'$*' printed more than one error line: $(cat "$TMP/e")"
}

"$FLOWLOADER" make-dataset --out="$DATA" --classes=3 --images_per_class=12 \
  --min_short_side=48 --max_short_side=64 >/dev/null
# A file name with a tab and a backslash: keys must not split a line or a column.
cp "$DATA/class_001/img_00000.jpg" "$DATA/class_001/odd"$'\t'"name\\x.jpg"

# --help and --version exit 0 and say something real.
"$FLOWLOADER" --help >"$TMP/help.txt" || fail "--help exited $?"
grep -q "flowloader run" "$TMP/help.txt" && grep -q "make-dataset" "$TMP/help.txt" ||
  fail "--help: $(cat "$TMP/help.txt")"
"$FLOWLOADER" run --help >"$TMP/run_help.txt" || fail "run --help exited $?"
grep -q -- "--batch_size=64 " "$TMP/run_help.txt" || fail "run --help lacks defaults"
grep -q -- "--pin_memory=true" "$TMP/run_help.txt" && grep -q -- "--name=default" "$TMP/run_help.txt" ||
  fail "run --help lacks the spec's keys: $(cat "$TMP/run_help.txt")"
! grep -q -- "--images_per_class" "$TMP/run_help.txt" || fail "run --help lists make-dataset's flags"
"$FLOWLOADER" make-dataset --help >"$TMP/make_dataset_help.txt"  # a file: no SIGPIPE
grep -q -- "--overwrite=false" "$TMP/make_dataset_help.txt" || fail "make-dataset --help"
"$FLOWLOADER" --version >"$TMP/version.txt" || fail "--version exited $?"
grep -Eq '^flowloader [0-9a-z.]+-g[0-9a-f]{7,}|^flowloader [A-Za-z0-9.]+' "$TMP/version.txt" &&
  ! grep -q "unknown" "$TMP/version.txt" || fail "--version: $(cat "$TMP/version.txt")"

# docs/cli.md's flag reference is run --help, byte for byte; its prose names the same flags.
"$PY" - "$TMP/run_help.txt" "$CLI_DOC" <<'PYEOF'
import difflib, re, sys
help_text = open(sys.argv[1]).read()
flags = set(re.findall(r"^  --([a-z0-9_]+)=", help_text, re.M))
doc = open(sys.argv[2]).read()
begin, end = "<!-- BEGIN run --help -->\n```text\n", "```\n<!-- END run --help -->"
assert begin in doc and end in doc, "docs/cli.md has no generated flag reference markers"
reference = doc[doc.index(begin) + len(begin):doc.index(end)]
diff = "".join(difflib.unified_diff(reference.splitlines(True), help_text.splitlines(True),
                                    "docs/cli.md", "flowloader run --help"))
assert not diff, ("docs/cli.md's flag reference differs from `flowloader run --help`: paste "
                  "`bazel-bin/runtime/flowloader run --help` between its markers\n" + diff)
start = doc.index("## Commands and flags")
section = doc[start:doc.index("\n## ", start + 1)]
documented = set(re.findall(r"--([a-z0-9_]+)", section))
missing = sorted(flags - documented)
assert not missing, "docs/cli.md's prose does not name: %s" % missing
other_commands = {"out", "classes", "images_per_class", "overwrite", "help", "version", "spec",
                  "dot", "task", "images", "part_size"}
stale = sorted(documented - flags - other_commands)
assert not stale, "docs/cli.md names flags run does not have: %s" % stale
PYEOF

# Refused before the run, exit 2, one line naming the flag.
R=(run --data="$DATA" --metrics_address= --progress=false --image_size=32)
expect 2 "^flowloader: --out is a flag of flowloader make-dataset, not of flowloader run$" "${R[@]}" --out=x
expect 2 "unknown flag --batchsize for flowloader run (did you mean --batch_size?)" "${R[@]}" --batchsize=3
expect 2 "^flowloader: --consumer_ms must be a number in \[0, 3600000\], got '-1'$" "${R[@]}" \
  --consumer_ms=-1
expect 2 "^flowloader: --report_every must be a number in \[0, 86400\]" "${R[@]}" --report_every=-1
expect 2 "^flowloader: --linger_seconds must be a number in \[0, 86400\]" "${R[@]}" \
  --linger_seconds=-5
# Finite: 1e999 and inf were read as inf, a sleep without end (the run hung).
expect 2 "^flowloader: --consumer_ms must be a number in \[0, 3600000\], got '1e999'$" \
  "${R[@]}" --consumer_ms=1e999
expect 2 "^flowloader: --linger_seconds must be a number in \[0, 86400\], got 'inf'$" \
  "${R[@]}" --linger_seconds=inf
expect 2 "^flowloader: --trace_spans must be an integer in \[1," "${R[@]}" --trace_out="$TMP/t.json" --trace_spans=-3
expect 2 "^flowloader: --shuffle must be true or false, got 'yes'$" "${R[@]}" --shuffle=yes
expect 2 "^flowloader: --summary_json=$TMP/no/such/dir/s.json: cannot create it in" "${R[@]}" \
  --summary_json="$TMP/no/such/dir/s.json"
expect 2 "^flowloader: --trace_out=$TMP is a directory" "${R[@]}" --trace_out="$TMP"
expect 2 "^flowloader: --resume must be EPOCH:BATCH" "${R[@]}" --resume=3
expect 2 "cannot resume at epoch 1 batch 1: the run has 1 epochs" "${R[@]}" --batch_size=5 --resume=1:1
expect 2 "no IPv6 support" "${R[@]}" --metrics_address='[::1]:0' --epochs=1
# An unknown op in a transforms stage's string form: one line, the 40 known ops cut (it
# listed them all: 770 characters).
printf 'data: %s\nstages:\n  - type: read\n  - type: decode\n  - type: transforms\n    options: {ops: "posterise_more()"}\n' \
  "$DATA" >"$TMP/ops_string.yaml"
expect 2 "unknown op 'posterise_more' (known: adjust_gamma, .*\.\.\. [0-9]* more)" run \
  --spec="$TMP/ops_string.yaml" --metrics_address= --progress=false
# (The spec's path, long in a sandbox, aside.)
[ "$(grep -v '^flowloader: [IW] ' "$TMP/e" | sed 's|^.*ops_string.yaml|ops_string.yaml|' | wc -c)" \
  -le 400 ] || fail "long: $(cat "$TMP/e")"
# A transforms stage's refusal names the stage and the op once ("stage 'transforms':
# transforms: op 1 (resize): ..." said it twice, 405-430 characters in all), and an unknown
# op's megabyte-long name once, cut (it was quoted twice: 763 characters).
printf 'data: %s\nstages:\n  - type: read\n  - type: decode\n  - type: transforms\n    options: {ops: "resize(size=64); normalize()"}\n' \
  "$DATA" >"$TMP/unfixed.yaml"
expect 2 "unfixed.yaml:5:5: stage 'transforms': op 1 (resize): the view's output size depends on the image, with no upper bound: .*size_divisibility$" \
  run --spec="$TMP/unfixed.yaml" --metrics_address= --progress=false
[ "$(grep -v '^flowloader: [IW] ' "$TMP/e" | sed 's|^.*unfixed.yaml|unfixed.yaml|' | wc -c)" \
  -le 400 ] || fail "long: $(cat "$TMP/e")"
LONG_NAME=$(head -c 1000000 /dev/zero | tr '\0' 'q')
printf 'data: %s\nstages:\n  - type: read\n  - type: decode\n  - type: transforms\n    options: {ops: "%s(); normalize()"}\n' \
  "$DATA" "${LONG_NAME:0:900000}" >"$TMP/long_op.yaml"
expect 2 "stage 'transforms': op 1: unknown op 'qqq.*(900000 characters)' (none is that long" \
  run --spec="$TMP/long_op.yaml" --metrics_address= --progress=false
[ "$(grep -v '^flowloader: [IW] ' "$TMP/e" | sed 's|^.*long_op.yaml|long_op.yaml|' | wc -c)" \
  -le 400 ] || fail "long: $(head -c 1000 "$TMP/e")"
# --data=/proc: the kernel's pseudo-filesystems are not walked (its */cwd links led back
# to / for minutes): refused at once, as a tree without images.
if [ "$(stat -f -c %T /proc 2>/dev/null)" = proc ]; then
  set +e
  timeout 60 "$FLOWLOADER" run --data=/proc --metrics_address= --progress=false >"$TMP/o" 2>"$TMP/e"
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q "^flowloader: /proc: no image files found" "$TMP/e" ||
    fail "--data=/proc exited $rc: $(head -c 2000 "$TMP/e")"
fi
# The read stage's backoff is bounded and named as written (it was "initial_backoff must
# be >= 0", and 1e18 ms waited for ever on the first transient error).
printf 'data: %s\nstages:\n  - type: read\n    options: {backoff_ms: 1e18}\n  - type: decode\n  - type: augment\n' \
  "$DATA" >"$TMP/backoff.yaml"
expect 2 "stage 'read': backoff_ms must be in \[0, 60000\] (milliseconds), got 1e18$" run \
  --spec="$TMP/backoff.yaml" --metrics_address= --progress=false
# A refusal names the flag and the value (it said "bad metrics address", "cannot write trace
# to /dev/full" and "writing --keys_out or --samples_out failed").
expect 2 "^flowloader: data $TMP/no/such/dir not found: No such file or directory$" run \
  --data="$TMP/no/such/dir" --metrics_address= --progress=false
expect 2 "^flowloader: bad metrics_address 'garbage': not a port number" "${R[@]}" \
  --metrics_address=garbage --epochs=1
if [ -w /dev/full ]; then
  expect 2 "^flowloader: cannot write --trace_out=/dev/full$" "${R[@]}" --epochs=1 \
    --trace_out=/dev/full
  expect 2 "^flowloader: writing --samples_out=/dev/full failed (disk full?)$" "${R[@]}" \
    --epochs=1 --samples_out=/dev/full
fi
expect 2 "is not empty .*pass --overwrite" make-dataset --out="$DATA" --classes=2
# A flag the task does not read is refused (--images made 10 × 30 classification images),
# and an --out that is a file is named as --out (it said "mkdir FILE/class_000").
expect 2 "^flowloader: --images is for --task=detection or segmentation; --task=classification makes --classes × --images_per_class images$" \
  make-dataset --out="$TMP/five" --images=5
expect 2 "^flowloader: --classes is for --task=classification; --task=detection makes --images images$" \
  make-dataset --task=detection --out="$TMP/five" --classes=5
: >"$TMP/a_file"
expect 2 "^flowloader: --out=$TMP/a_file exists and is not a directory" make-dataset --out="$TMP/a_file"
expect 2 "^flowloader: --out=$TMP/a_file exists and is not a directory" pack --data="$DATA" \
  --out="$TMP/a_file"
# An image larger than the memory there is is refused before it is drawn (65000 pixels a
# side took 16+ GB and was OOM-killed); where 24 GiB are available it is not refused.
AVAIL_KB=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
if [ "$AVAIL_KB" -lt $((65000 * 97500 * 3 / 1024)) ]; then
  expect 2 "^flowloader: --max_short_side 65000 makes images of up to 97500x65000 pixels, .* each in memory, but .* is available (.*): lower --max_short_side$" \
    make-dataset --out="$TMP/huge" --classes=1 --images_per_class=1 --min_short_side=65000 \
    --max_short_side=65000
  expect 2 "^flowloader: --max_short_side 65000 makes images of up to 65000x65000 pixels" \
    make-dataset --task=detection --out="$TMP/huge" --images=1 --min_short_side=65000 \
    --max_short_side=65000
fi
"$FLOWLOADER" make-dataset --out="$DATA" --classes=3 --images_per_class=12 \
  --min_short_side=48 --max_short_side=64 >/dev/null || fail "the same dataset again must be a no-op"
# A quoted number and a yes are refused in a spec as on the command line, for pipeline
# keys and stage options alike.
printf 'data: data\nbatch_size: "32"\n' >"$TMP/quoted.yaml"
expect 2 "quoted.yaml:2:13: batch_size must be an integer, got the string '32'" run --spec="$TMP/quoted.yaml"
printf 'data: data\nstages:\n  - type: read\n  - type: decode\n    options: {fast_idct: yes}\n  - type: augment\n' \
  >"$TMP/yes.yaml"
expect 2 "yes.yaml:5:26: stage 'decode' option 'fast_idct' must be bool, got 'yes'" run --spec="$TMP/yes.yaml"

# A stage option only its factory can check (a mean of two numbers) still names its place.
printf 'data: data\nstages:\n  - type: read\n  - type: decode\n  - type: augment\n    options: {mean: [0.5, 0.5]}\n' \
  >"$TMP/mean.yaml"
expect 2 "mean.yaml:5:5: stage 'augment': .*mean" run --spec="$TMP/mean.yaml" --metrics_address=

# A run that delivers nothing exits 3 and says why.
printf 'gone/a.jpg\t0\ngone/b.jpg\t1\ngone/c.jpg\t1\n' >"$TMP/gone.txt"
expect 3 "^flowloader: the run delivered no sample: every sample failed: 3 × not_found in read$" \
  run --data="$TMP/gone.txt" --metrics_address= --progress=false
grep -q "no batch delivered" "$TMP/o" || fail "the report should say no batch came: $(cat "$TMP/o")"

# --samples_out: a header, one line per sample, keys escaped; --keys_out the same keys.
"$FLOWLOADER" "${R[@]}" --epochs=2 --batch_size=5 --seed=3 --samples_out="$TMP/full.tsv" \
  --keys_out="$TMP/keys.txt" --summary_json="$TMP/full.json" >/dev/null 2>&1 || fail "full run"
"$PY" - "$TMP/full.tsv" "$TMP/keys.txt" "$TMP/full.json" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[0] == "epoch\tbatch\tkey\tlabel\tsource" and lines[-1] == "", lines[:2]
rows = [l.split("\t") for l in lines[1:-1]]
assert len(rows) == 74 and all(len(r) == 5 for r in rows), len(rows)   # 37 x 2 epochs
assert {r[4] for r in rows} == {"default"}, "one source is named default"
odd = [r for r in rows if r[2].startswith("class_001/odd")]
assert [r[2] for r in odd] == ["class_001/odd\\tname\\\\x.jpg"] * 2, odd
assert all(r[3] == "1" for r in odd) and {r[0] for r in rows} == {"0", "1"}
assert [int(r[1]) for r in rows if r[0] == "0"] == sorted(int(r[1]) for r in rows if r[0] == "0")
keys = open(sys.argv[2]).read().split("\n")[:-1]
assert keys == [r[2] for r in rows], "keys_out and samples_out disagree"
assert json.load(open(sys.argv[3]))["checkpoint"] == {"epoch": 2, "batch": 0}
PYEOF

# SIGINT mid-run, then --resume at the printed checkpoint: together exactly the full run.
"$FLOWLOADER" "${R[@]}" --epochs=2 --batch_size=5 --seed=3 --consumer_ms=100 \
  --samples_out="$TMP/part1.tsv" --summary_json="$TMP/part1.json" >"$TMP/part1.out" 2>&1 &
PID=$!
# Signal once the first batch is written (each batch is flushed; at 100 ms a batch the
# other 15 take 1.5 s, so the signal lands mid-run).
for _ in $(seq 1 600); do
  [ -f "$TMP/part1.tsv" ] && [ "$(wc -l <"$TMP/part1.tsv")" -gt 1 ] && break
  kill -0 $PID 2>/dev/null || break
  sleep 0.01
done
kill -INT $PID 2>/dev/null || true
set +e; wait $PID; rc=$?; set -e
[ $rc -eq 130 ] || fail "interrupted run exited $rc, want 130: $(cat "$TMP/part1.out")"
CURSOR=$("$PY" -c "import json; c=json.load(open('$TMP/part1.json'))['checkpoint']; print('%d:%d' % (c['epoch'], c['batch']))")
grep -q "interrupted at checkpoint $CURSOR: resume with --resume=$CURSOR" "$TMP/part1.out" ||
  fail "no checkpoint line: $(cat "$TMP/part1.out")"
# A long simulated training step ends at Ctrl-C, not when it would have (it slept its
# whole --consumer_ms first: ten minutes here).
"$FLOWLOADER" "${R[@]}" --epochs=1 --batch_size=5 --consumer_ms=600000 \
  --samples_out="$TMP/long.tsv" >"$TMP/long.out" 2>&1 &
PID=$!
for _ in $(seq 1 600); do
  [ -f "$TMP/long.tsv" ] && [ "$(wc -l <"$TMP/long.tsv")" -gt 1 ] && break
  sleep 0.01
done
sent=$(date +%s.%N)
kill -INT $PID 2>/dev/null || true
set +e; wait $PID; rc=$?; set -e
took=$("$PY" -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$sent" "$(date +%s.%N)")
[ $rc -eq 130 ] || fail "a run in a long consumer step exited $rc after SIGINT, want 130"
"$PY" -c "import sys; assert float(sys.argv[1]) < 5, sys.argv[1]" "$took" ||
  fail "a run in a long consumer step took ${took}s to end after SIGINT"
"$FLOWLOADER" "${R[@]}" --epochs=2 --batch_size=5 --seed=3 --resume="$CURSOR" \
  --samples_out="$TMP/part2.tsv" >/dev/null 2>&1 || fail "resumed run exited $?"
"$PY" - "$TMP/full.tsv" "$TMP/part1.tsv" "$TMP/part2.tsv" <<'PYEOF'
import sys
full, one, two = (open(p).read().split("\n")[1:-1] for p in sys.argv[1:])
assert one and two and one + two == full, (len(one), len(two), len(full))
PYEOF

echo "cli_usage_test: 1 passed, 0 failed"
