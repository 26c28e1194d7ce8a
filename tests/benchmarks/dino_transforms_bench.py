#!/usr/bin/python3
"""dino_transforms_bench.py: DINO's recipe through flowloader.transforms
(examples/python/dino.py) against the same recipe as a spec (runtime/specs/dino.yaml).

    PYTHONPATH=bazel-out/k8-fastbuild/bin/python /usr/bin/python3 \
        tests/benchmarks/dino_transforms_bench.py [--data=DIR] [--rounds=5] [--batches=8]

Both are flowloader.DataLoader(batch_size=64, num_workers=2, prefetch_batches=3,
drop_last=True) in this one process over the same ImageFolder; they should be the same
pipeline (the transforms module only writes the op lists, and a test checks that the
bytes are equal), so the target is images/s within 5%. Each round makes each loader anew
and times --batches batches after its first (and reads the stages' busy time per
image, summed over threads, from stats()); the two alternate within a round (which
goes first alternates too), and the result is the median of the rounds' ratios, because
this shared VM moves run to run. Data: <repo>/.bench_data/recipes_20x100
(recipes_bench.py's 2000 JPEGs, 256-512 px), made here with `flowloader make-dataset`
when missing. A program, not a unit test.
"""
import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def dataset(bin_path):
    root = os.path.join(REPO, ".bench_data", "recipes_20x100")
    if not os.path.isdir(root):
        os.makedirs(os.path.dirname(root), exist_ok=True)
        subprocess.run([bin_path, "make-dataset", f"--out={root}", "--classes=20",
                        "--images_per_class=100", "--min_short_side=256",
                        "--max_short_side=512", "--quality=90", "--noise=7", "--seed=1"],
                       check=True, stdout=subprocess.DEVNULL)
    return root


def measure(loader, batches):
    """(images/s over `batches` batches after the first, start-up excluded; the stages'
    busy milliseconds per sample, summed over threads: the CPU each image costs, which a
    loaded machine disturbs less than the wall clock)."""
    with loader:
        it = iter(loader)
        next(it)
        start, images = time.perf_counter(), 0
        for _ in range(batches):
            _, labels = next(it)
            images += labels.shape[0]
        ips = images / (time.perf_counter() - start)
        stats = loader.stats()
    busy = sum(stage["busy_seconds"] for stage in stats["stages"].values())
    return ips, 1000 * busy / max(1, stats["samples"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data")
    parser.add_argument("--bin", default=os.path.join(REPO, "bazel-bin/runtime/flowloader"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=8)
    args = parser.parse_args()
    import flowloader
    path = os.path.join(REPO, "examples", "python", "dino.py")
    spec = importlib.util.spec_from_file_location("dino_example", path)
    dino = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dino)
    data = args.data or dataset(args.bin)
    makers = {
        "transforms": lambda: dino.make_loader(data, batch_size=64, num_workers=2),
        # prefetch_batches=3 as the DataLoader's default without a spec (with spec= it
        # would be the spec's, or the autotuner's "auto"): the same settings on both sides.
        "spec": lambda: flowloader.DataLoader(
            data, spec=os.path.join(REPO, "runtime", "specs", "dino.yaml"), batch_size=64,
            num_workers=2, prefetch_batches=3, drop_last=True),
    }
    results = {name: [] for name in makers}
    busy = {name: [] for name in makers}
    for r in range(args.rounds):
        order = list(makers) if r % 2 == 0 else list(reversed(makers))
        for name in order:
            ips, ms = measure(makers[name](), args.batches)
            results[name].append(ips)
            busy[name].append(ms)
        print(f"round {r + 1}: " + ", ".join(
            f"{n} {results[n][-1]:.1f} images/s ({busy[n][-1]:.1f} busy ms/image)"
            for n in makers) + f", load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    medians = {n: statistics.median(v) for n, v in results.items()}
    busy_medians = {n: statistics.median(v) for n, v in busy.items()}
    # The ratio within each round (its two runs sat side by side, under the same load),
    # then their median: steadier than the ratio of medians on a machine whose load moves.
    ratio = statistics.median(a / b for a, b in zip(results["transforms"], results["spec"]))
    print(f"DINO, batch 64, 2 workers, {args.rounds} rounds x {args.batches} batches: "
          f"flowloader.transforms {medians['transforms']:.1f} images/s, dino.yaml "
          f"{medians['spec']:.1f} images/s (medians); median per-round ratio {ratio:.3f} "
          f"(target 0.95-1.05: {'pass' if abs(ratio - 1) <= 0.05 else 'FAIL'}); busy ms per "
          f"image {busy_medians['transforms']:.2f} against {busy_medians['spec']:.2f} "
          f"(ratio {busy_medians['transforms'] / busy_medians['spec']:.3f}); load "
          f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
