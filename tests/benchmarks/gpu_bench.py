#!/usr/bin/env python3
"""gpu_bench.py: flowloader and PyTorch's DataLoader feeding a CUDA device, same data, same cores.

  python3 tests/benchmarks/gpu_bench.py --bins=DIR [--cores=2,8] [--reps=3] [--images=4000]

Needs a CUDA device and a torch that sees it (the GPU machine's python3). For each core count n
every run is pinned with `taskset -c 0-(n-1)`, and each round runs, in this order:
  flowloader --device=cuda   num_workers=n, pinned buffers, each batch copied and waited for
  flowloader --device=cpu    the same without the upload: what the copy costs
  torch DataLoader           num_workers=n, pin_memory=True, .to("cuda", non_blocking=True)
on the train transform (RandomResizedCrop 224, flip, normalize; float32 CHW, batch 64).
Figures are medians over rounds of images/s after the first batch (runners.py). Prints one
table and writes everything to --out as JSON. Exit status 0 when every run succeeded.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("BENCH_PYTHON", sys.executable)

import runners  # noqa: E402


def make_dataset(bins, root, images, classes=20):
    if os.path.isdir(root):
        return
    tmp = root + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run([os.path.join(bins, "flowloader"), "make-dataset", f"--out={tmp}",
                    f"--classes={classes}", f"--images_per_class={images // classes}",
                    "--min_short_side=256", "--max_short_side=512", "--quality=90",
                    "--noise=7", "--seed=1"], check=True, stdout=subprocess.DEVNULL)
    os.rename(tmp, root)


def one_round(bins, data, cores, device):
    cpus = f"0-{cores - 1}"
    return {
        "flowloader_cuda": runners.run_flowloader(bins, data, num_workers=cores, device=device,
                                                  taskset=cpus),
        "flowloader_cpu": runners.run_flowloader(bins, data, num_workers=cores, device="cpu",
                                                 taskset=cpus),
        "torch_cuda": runners.run_torch(data, num_workers=cores, device=device, taskset=cpus),
    }


def median_ips(rounds, system):
    return statistics.median(r[system]["ips_after_first"] for r in rounds)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bins", required=True, help="directory holding the flowloader binary")
    p.add_argument("--data", default="/tmp/gpu_bench_data")
    p.add_argument("--images", type=int, default=4000)
    p.add_argument("--cores", default="2,8", help="comma-separated core counts")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", default="gpu_bench.json")
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                   help="cpu: a dry run of this script on a machine without a GPU")
    a = p.parse_args()

    make_dataset(a.bins, a.data, a.images)
    results = {"cpu_count": os.cpu_count(), "by_cores": {}}
    print(f"{'cores':>5} {'flowloader cuda':>16} {'flowloader cpu':>15} {'torch cuda':>11} "
          f"{'ratio':>6} {'upload cost':>12}")
    for cores in (int(c) for c in a.cores.split(",")):
        rounds = [one_round(a.bins, a.data, cores, a.device) for _ in range(a.reps)]
        fl_cuda = median_ips(rounds, "flowloader_cuda")
        fl_cpu = median_ips(rounds, "flowloader_cpu")
        torch_cuda = median_ips(rounds, "torch_cuda")
        row = {"flowloader_cuda_ips": fl_cuda, "flowloader_cpu_ips": fl_cpu,
               "torch_cuda_ips": torch_cuda, "ratio_vs_torch": fl_cuda / torch_cuda,
               "upload_cost": 1 - fl_cuda / fl_cpu,
               "memory": rounds[0]["flowloader_cuda"]["summary"].get("memory"),
               "device": rounds[0]["flowloader_cuda"]["summary"].get("device"),
               "rounds": [{k: {"ips": v["ips_after_first"], "cpu_seconds": v["cpu_seconds"]}
                           for k, v in r.items()} for r in rounds]}
        results["by_cores"][cores] = row
        print(f"{cores:>5} {fl_cuda:>16.0f} {fl_cpu:>15.0f} {torch_cuda:>11.0f} "
              f"{row['ratio_vs_torch']:>5.2f}x {row['upload_cost']:>11.1%}", flush=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
