#!/usr/bin/env bash
# device_checks.sh: the CUDA path on a machine with a GPU, from what pack_for_device.sh
# gathered in .gpu/. Run there from the repository root; results go to $OUT (or ./gpu_out).
#   1. device_memory_test and cuda_upload_test with FLOWLOADER_EXPECT_CUDA=1: no host
#      fallback allowed; every delivered batch read back from the device equals its host bytes;
#   2. the CLI with --device=cuda and --device=cpu on the same data and seed: equal
#      data_checksum, for the default graph and for runtime/specs/views.yaml (three views);
#   3. gpu_bench.py: flowloader vs PyTorch's DataLoader feeding the GPU, on 2 and 8 cores.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu_out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.gpu/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export FLOWLOADER_EXPECT_CUDA=1 TEST_TMPDIR=/tmp/gpu_tests PYTHONUNBUFFERED=1
mkdir -p "$TEST_TMPDIR"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"

for t in device_memory_test cuda_upload_test; do
  if .gpu/bin/$t > "$out/$t.log" 2>&1; then echo "PASS $t"; else echo "FAIL $t"; status=1; fi
  grep -E '^\[  (SKIPPED|FAILED) ' "$out/$t.log"
done

fl=.gpu/bin/flowloader
$fl make-dataset --out=/tmp/gpu_small --classes=10 --images_per_class=30 >/dev/null
for graph in default views; do
  spec=(); [ $graph = views ] && spec=(--spec=runtime/specs/views.yaml)
  for device in cuda cpu; do
    $fl run "${spec[@]}" --data=/tmp/gpu_small --device=$device --epochs=2 --num_workers=4 \
      --checksum --progress=false --metrics_address= \
      --summary_json="$out/${graph}_$device.json" > "$out/${graph}_$device.log" 2>&1 ||
      { echo "FAIL run $graph --device=$device"; status=1; }
  done
  python3 - "$out" $graph <<'PY' || status=1
import json, sys
out, graph = sys.argv[1:]
cuda, cpu = (json.load(open(f"{out}/{graph}_{d}.json")) for d in ("cuda", "cpu"))
same = cuda["data_checksum"] == cpu["data_checksum"]
print("PASS" if same else "FAIL", graph, "data_checksum cuda", cuda["data_checksum"],
      "cpu", cpu["data_checksum"], "outputs", list(cuda.get("outputs", {})))
sys.exit(0 if same else 1)
PY
done

timeout 420 python3 tests/benchmarks/gpu_bench.py --bins=.gpu/bin --cores=2,8 --reps="${GPU_BENCH_REPS:-3}" \
  --out="$out/gpu_bench.json" || { echo "FAIL gpu_bench"; status=1; }
exit $status
