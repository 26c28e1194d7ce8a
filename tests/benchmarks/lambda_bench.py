#!/usr/bin/python3
"""lambda_bench.py: a T.Lambda doing a numpy op per sample against the same pipeline
without it (issue 25's target: the Lambda keeps >= 80% of the images/s, 2 workers).

    tests/benchmarks/lambda_bench.py [--images=2000] [--rounds=7] [--epochs=1] [--no_build]

Builds //python:flowloader and the CLI (the default configuration, as python/run_tests.sh
does), uses dataset_bench.py's 2000 JPEGs (`flowloader make-dataset`, cached under
/tmp/flowloader_python_bench), and alternates rounds of these loaders in this process,
each DataLoader(ROOT, batch_size=64, num_workers=2, transform=T.Compose([...])):
  plain       RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize(m, s)
  native      plain with RandomVerticalFlip(p=0) after the flip: an op that does nothing
              but splits the fused crop+normalize pass, as any op there does (what the
              Lambda's slot costs without Python)
  lambda      plain with Lambda(invert) there: np.subtract(255, image, out=image)
  lambda_rng  plain with Lambda(shift) there: fn(image, rng), a brightness shift drawn
              from the Generator, np.add(image, k, out=image) on a wrapped uint8 array
The two Lambdas are numpy ops of a few microseconds on 224 x 224 x 3: what is measured is
the cost of calling Python per sample, not the op. images/s = samples / wall time from
DataLoader(...) to the last batch, each batch touched (images.sum()); CPU per image is
this process's CPU time over the same span. The order of the loaders rotates by round.
Reported: medians over the rounds, each Lambda's ratio to plain (the median of the
per-round ratios), the python_lambda op's busy time per sample from stats(), and the
load average. Writes results/lambda.json (every run).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHE = "/tmp/flowloader_python_bench"
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def build():
    subprocess.run(["bazel", "build", "//python:flowloader", "//runtime:flowloader"], cwd=ROOT,
                   check=True)


def dataset(cli, images):
    out = os.path.join(CACHE, f"data_{images}")
    if not os.path.isdir(out):
        os.makedirs(CACHE, exist_ok=True)
        subprocess.run([cli, "make-dataset", f"--out={out}", "--classes=10",
                        f"--images_per_class={images // 10}"], check=True)
    return out


def invert(image):
    np.subtract(255, image, out=image)


def shift(image, rng):
    k = rng.integers(0, 32, dtype=np.uint8)
    np.add(image, k, out=image)  # Wraps around: cheap, and the output depends on rng.


def composes(T):
    def plain(*middle):
        return T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), *middle,
                          T.ToTensor(), T.Normalize(MEAN, STD)])
    return {"plain": plain(), "native": plain(T.RandomVerticalFlip(p=0)),
            "lambda": plain(T.Lambda(invert)), "lambda_rng": plain(T.Lambda(shift))}


def run(flowloader, root, compose, epochs):
    cpu0, start = time.process_time(), time.monotonic()
    loader = flowloader.DataLoader(root, batch_size=64, num_workers=2, transform=compose)
    samples = 0
    for _ in range(epochs):
        for images, _ in loader:
            images.sum()  # Touch the batch, as a training step would read it.
            samples += images.shape[0]
    wall, cpu = time.monotonic() - start, time.process_time() - cpu0
    stats = loader.stats()
    loader.close()
    ops = {row["op"]: row for row in stats["stages"]["transforms"]["ops"]}
    lam = ops.get("python_lambda")
    return {"images_per_second": samples / wall, "cpu_ms_per_image": 1000 * cpu / samples,
            "samples": samples, "seconds": wall, "skipped": stats["skipped"],
            "lambda_us_per_sample": (1e6 * lam["busy_seconds"] / max(1, lam["applied"])
                                     if lam else None)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--no_build", action="store_true", help="use the build that is there")
    p.add_argument("--module", help="the folder holding the flowloader package to time "
                   "(default: the build's bazel-out/k8-fastbuild/bin/python)")
    p.add_argument("--out", default=os.path.join(HERE, "results", "lambda.json"))
    args = p.parse_args()
    if not args.no_build:
        build()
    bins = os.path.join(ROOT, "bazel-out", "k8-fastbuild", "bin")
    sys.path.insert(0, args.module or os.path.join(bins, "python"))
    import flowloader
    import flowloader.transforms as T
    root = dataset(os.path.join(bins, "runtime", "flowloader"), args.images)
    loaders = composes(T)
    load_start = os.getloadavg()
    print(f"{args.images} JPEGs; {flowloader.__file__}; load average {load_start}",
          flush=True)
    run(flowloader, root, loaders["plain"], 1)  # Warm-up: page cache, first touch.
    runs = {name: [] for name in loaders}
    names = list(loaders)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            result = run(flowloader, root, loaders[name], args.epochs)
            assert result["skipped"] == 0 and result["samples"] == args.epochs * args.images
            runs[name].append(result)
        print(f"round {r}: " + ", ".join(
            f"{n} {runs[n][-1]['images_per_second']:.0f}" for n in names) +
            f" images/s; load {os.getloadavg()[0]:.1f}", flush=True)

    def med(name, key):
        return statistics.median(x[key] for x in runs[name])

    def ratio(name, key="images_per_second"):
        return statistics.median(a[key] / b[key] for a, b in zip(runs[name], runs["plain"]))

    print(f"| loader | images/s | of plain (per-round median) | CPU ms/image | "
          f"python_lambda us/sample |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name in names:
        lam = med(name, "lambda_us_per_sample") if runs[name][0]["lambda_us_per_sample"] else None
        print(f"| {name} | {med(name, 'images_per_second'):.0f} | {100 * ratio(name):.1f}% | "
              f"{med(name, 'cpu_ms_per_image'):.3f} | {f'{lam:.1f}' if lam else ''} |")
    load_end = os.getloadavg()
    for name in ("lambda", "lambda_rng"):
        print(f"{name}: {100 * ratio(name):.1f}% of plain's images/s (target >= 80%: "
              f"{'PASS' if ratio(name) >= 0.8 else 'FAIL'})")
    print(f"load average at start {load_start}, at end {load_end}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"images": args.images, "epochs": args.epochs, "rounds": args.rounds,
                   "ratios": {n: ratio(n) for n in names},
                   "median_images_per_second": {n: med(n, "images_per_second") for n in names},
                   "runs": runs, "load_start": load_start, "load_end": load_end,
                   "nproc": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M")}, f,
                  indent=1)


if __name__ == "__main__":
    main()
