# fuzz_common.sh: what the libFuzzer drivers (run_fuzz.sh, run_tar_fuzz.sh) share: the
# clang check, the link libraries, an incremental parallel compile of a source list, and
# one bounded libFuzzer run with its pass/fail rules. Sourced, not run.
#
# The caller sets ROOT (the source tree) and FUZZ_NAME (its script name, for messages).
# Bazel's toolchain is gcc (no libFuzzer), so the drivers compile the sources they need
# directly with clang++ against Debian's libraries (not instrumented: coverage feedback
# comes from our code, the sanitizers check our code's accesses to their memory).

CXX="${CXX_FUZZ:-clang++}"
command -v "$CXX" >/dev/null || {
  echo "$FUZZ_NAME: $CXX not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
}

# A command that fails under `set -e` names itself and its line, so a CI log that shows
# nothing else still says which step (compile, link, seeds, run) stopped the script.
set -E
trap 'fuzz_rc=$?; echo "$FUZZ_NAME: failed (exit $fuzz_rc) at ${BASH_SOURCE[0]##*/}:$LINENO: $BASH_COMMAND" >&2' ERR

FUZZ_ABSL_LIBS=(-labsl_status -labsl_statusor -labsl_cord -labsl_cord_internal
  -labsl_cordz_info -labsl_cordz_handle -labsl_cordz_functions -labsl_str_format_internal
  -labsl_strings -labsl_strings_internal -labsl_synchronization -labsl_time
  -labsl_time_zone -labsl_int128 -labsl_raw_logging_internal -labsl_throw_delegate
  -labsl_base -labsl_spinlock_wait -labsl_malloc_internal -labsl_exponential_biased
  -labsl_stacktrace -labsl_symbolize -labsl_debugging_internal -labsl_demangle_internal
  -labsl_graphcycles_internal -labsl_bad_optional_access -labsl_bad_variant_access
  -labsl_hash -labsl_city -labsl_low_level_hash -labsl_raw_hash_set)
FUZZ_COMMON=(-std=c++17 -march=x86-64-v2 -g -O1 -I"$ROOT" -fno-omit-frame-pointer)
FUZZ_SAN=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)

# An object is rebuilt when its source, or any header it could include, is newer. No
# `ls -t | head -1` here: under pipefail, ls dies of SIGPIPE whenever its listing passes
# one 4 KiB write (a long checkout path), which stopped CI's fuzz smoke test at random.
FUZZ_NEWEST_HEADER=""
for header in "$ROOT"/stages/*/*.h "$ROOT"/stages/*/internal/*.h "$ROOT"/tests/fuzz/*.h; do
  if [[ -z "$FUZZ_NEWEST_HEADER" || "$header" -nt "$FUZZ_NEWEST_HEADER" ]]; then
    FUZZ_NEWEST_HEADER="$header"
  fi
done

# fuzz_isa_flags: the resampler's kernel files are compiled for their instruction sets, as
# in stages/augment/BUILD (copts of :resample_avx2, :pillow_avx2, :pillow_vnni,
# :pillow_busd and :resample_avx512).
fuzz_isa_flags() {  # src
  case "$1" in
    */resample_avx2.cc) echo "-mavx2 -ffp-contract=off" ;;
    */pillow_avx2.cc) echo "-mavx2" ;;
    */pillow_vnni.cc) echo "-mavx2 -mavx512f -mavx512vl -mavx512vnni" ;;
    */pillow_busd.cc)
      echo "-mavx2 -mavx512f -mavx512vl -mavx512bw -mavx512vbmi -mavx512vnni" ;;
    */resample_avx512.cc | */resample_ycc_avx512.cc)
      echo "-mavx2 -mavx512f -mavx512bw -ffp-contract=off" ;;
  esac
}

fuzz_compile() {  # out src flags...
  local out="$1" src="$2"; shift 2
  if [[ ! -f "$out" || "$ROOT/$src" -nt "$out" || "$FUZZ_NEWEST_HEADER" -nt "$out" ]]; then
    # shellcheck disable=SC2046  # fuzz_isa_flags prints separate words on purpose.
    "$CXX" "${FUZZ_COMMON[@]}" "$@" $(fuzz_isa_flags "$src") -c "$ROOT/$src" -o "$out"
  fi
}

# fuzz_build compiles each source into DIR, FUZZ_JOBS (2) at a time, and leaves the
# objects in OBJS.
fuzz_build() {  # dir flags... -- srcs...
  local dir="$1"; shift
  local flags=()
  while [[ "$1" != "--" ]]; do flags+=("$1"); shift; done
  shift
  mkdir -p "$dir"
  local pids=() objs=() i=0
  for src in "$@"; do
    local obj="$dir/$(echo "$src" | tr / _).o"
    objs+=("$obj")
    fuzz_compile "$obj" "$src" "${flags[@]}" &
    pids+=($!)
    if (( ++i % ${FUZZ_JOBS:-2} == 0 )); then
      for p in "${pids[@]}"; do wait "$p"; done
      pids=()
    fi
  done
  for p in "${pids[@]}"; do wait "$p"; done
  OBJS=("${objs[@]}")
}

# fuzz_run runs FUZZER for SECONDS with the shared limits (crash, -timeout=10 s per input,
# -rss_limit_mb=2048), reproducers going to ARTIFACTS, then prints one summary line. It
# exits non-zero when libFuzzer reported a problem or ran fewer than 1000 inputs; the
# message says to copy a reproducer into REGRESSIONS (replayed by a Bazel test).
fuzz_run() {  # fuzzer seconds log artifacts regressions -- libFuzzer args (dict, corpora)...
  local fuzzer="$1" seconds="$2" log="$3" artifacts="$4" regressions="$5"
  shift 6
  local rc
  set +e
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" >"$log" 2>&1
  rc=$?
  set -e
  local execs rate peak cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  peak=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  echo "$FUZZ_NAME: ${seconds} s, rc=$rc, executions=${execs:-?}, exec/s=${rate:-?}, peak_rss_mb=${peak:-?}, ${cov:-cov: ?}"
  if (( rc != 0 )); then
    tail -n 60 "$log" >&2
    echo "$FUZZ_NAME: FAIL: libFuzzer exited $rc; reproducers in $artifacts:" >&2
    ls -l "$artifacts" >&2
    echo "copy one into $regressions to keep it as a regression test" >&2
    exit 1
  fi
  if [[ -z "$execs" || "$execs" -lt 1000 ]]; then
    tail -n 30 "$log" >&2
    echo "$FUZZ_NAME: FAIL: only ${execs:-0} executions (expected thousands)" >&2
    exit 1
  fi
  echo "$FUZZ_NAME: PASS"
}
