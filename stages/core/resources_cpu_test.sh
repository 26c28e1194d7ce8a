#!/bin/bash
# resources_cpu_test.sh: UsableCpus follows the real affinity mask: under `taskset -c 0`
# the process may use exactly one CPU, whatever the machine has.
set -euo pipefail
bin="${TEST_SRCDIR}/${TEST_WORKSPACE}/stages/core/print_resources"

out="$(taskset -c 0 "$bin")"
echo "$out"
grep -qx 'affinity_cpus=1' <<<"$out" || { echo "FAIL: affinity under taskset -c 0"; exit 1; }
grep -qx 'usable_cpus=1' <<<"$out" || { echo "FAIL: usable_cpus under taskset -c 0"; exit 1; }

# Without taskset it sees what the test runner was given (at least one CPU).
all="$("$bin")"
want="$(nproc)"
grep -qx "affinity_cpus=${want}" <<<"$all" || { echo "FAIL: affinity_cpus != nproc ($want)"; echo "$all"; exit 1; }
echo PASS
