#!/usr/bin/env bash
# plan_rss_cli_test.sh: `flowloader plan` is within 15% of the peak RSS of the run it
# plans, for the default configuration (2 workers, 2 buffers, batch 64, 224² float32,
# decode's defaults) over ImageNet-like JPEGs (make-dataset, shorter side 256-512): the
# whole process's peak (wait4), binary and libraries included, against the plan's total.
# A memory limit 15% above the peak must not refuse it either.
# Sanitized builds map shadow memory and quarantine frees: there RSS says nothing.
source tests/testing/cli_test_lib.sh "$@"
DATA="$TMP/data"

if [ "$SANITIZED" = 1 ]; then
  echo "plan_rss_cli_test: skipped (sanitized build)"
  exit 0
fi
"$FLOWLOADER" make-dataset --out="$DATA" --classes=4 --images_per_class=50 \
  --min_short_side=256 --max_short_side=512 --quality=90 --noise=7 >/dev/null
FLAGS=(--data="$DATA" --num_workers=2 --prefetch_batches=2)
"$FLOWLOADER" plan "${FLAGS[@]}" --json >"$TMP/plan.json" || fail "plan exited $?"

"$PY" - "$FLOWLOADER" "$TMP/plan.json" "${FLAGS[@]}" <<'PYEOF'
import json, os, subprocess, sys
flowloader, plan_path, flags = sys.argv[1], sys.argv[2], sys.argv[3:]
plan = json.load(open(plan_path))["total_bytes"]
peaks = []
for _ in range(3):
    proc = subprocess.Popen([flowloader, "run", *flags, "--epochs=2", "--metrics_address=",
                             "--noprogress"], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "run failed"
    peaks.append(usage.ru_maxrss * 1024)
peak = sorted(peaks)[1]
ratio = plan / peak
print(f"plan_rss_cli_test: plan {plan / 2**20:.1f} MiB, peak RSS {peak / 2**20:.1f} MiB "
      f"(runs {[round(p / 2**20, 1) for p in peaks]}), plan / peak {ratio:.3f}")
assert 0.85 <= ratio <= 1.15, f"plan / peak RSS {ratio:.3f} is not within 15%"
# A limit 15% above the peak is enough for the run that Create checks against it.
limit_mb = int(peak * 1.15) >> 20
rc = subprocess.run([flowloader, "run", *flags, "--epochs=1", "--metrics_address=",
                     "--noprogress", f"--memory_limit_mb={limit_mb}"],
                    stdout=subprocess.DEVNULL).returncode
assert rc == 0, f"--memory_limit_mb={limit_mb} (15% above the peak) refused: exit {rc}"
PYEOF
echo "plan_rss_cli_test: 1 passed, 0 failed"
