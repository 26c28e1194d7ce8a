#!/usr/bin/env python3
"""views_bench.py: CPU time per sample of several views per sample against one view.

    /usr/bin/python3 tests/benchmarks/views_bench.py --bin=bazel-bin/runtime/flowloader \
        [--base_bin=BASE/bazel-bin/runtime/flowloader] [--reps=5] [--data=DIR]

Graphs measured (train transform, one decode per sample):
  one     read → decode → augment (224², float32): the default graph, as a spec
  two     read → decode → augment with outputs [view0, view1] (two 224² views)
  two+96  two 224² views plus a second augment branch at 96² (uint8)
  default the built-in graph without a spec (compared with --base_bin, the build before
          several views existed, to show no regression)

Each run is `flowloader run` over the same data for --epochs epochs; its CPU time is the
child's user+sys (os.wait4: every thread of the process), divided by the samples it
delivered. Runs alternate graph by graph within each rep, and medians are reported,
because this shared VM moves run to run by about 10%. Prints one line per graph, the
ratios, and PASS/FAIL of two 224² views against 1.5× one view's CPU per sample (and of the
default graph against the base build within 3%). A program, not a unit test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

STAGES = {
    "one": """\
  - type: read
  - type: decode
  - type: augment
""",
    "two": """\
  - type: read
  - type: decode
  - type: augment
    outputs: [view0, view1]
""",
    "two+96": """\
  - type: read
  - type: decode
  - type: augment
    outputs: [view0, view1]
  - type: augment
    name: small
    outputs: [small]
    options: {image_size: 96, layout: uint8_hwc}
""",
}


def write_spec(tmp, name, data, args):
    path = os.path.join(tmp, f"{name.replace('+', '_')}.yaml")
    with open(path, "w") as f:
        f.write(f"data: {data}\nbatch_size: {args.batch_size}\nnum_workers: {args.num_workers}\n"
                f"prefetch_batches: 3\nepochs: {args.epochs}\nseed: 0\nstages:\n")
        f.write(STAGES[name])
    return path


def run_once(binary, run_args, tmp):
    """CPU seconds per delivered sample of one `flowloader run`."""
    summary = os.path.join(tmp, "summary.json")
    cmd = [binary, "run", f"--summary_json={summary}", "--metrics_address="] + run_args
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"views_bench: {' '.join(cmd)} failed:\n{err}")
    with open(summary) as f:
        samples = json.load(f)["samples"]
    return (usage.ru_utime + usage.ru_stime) / samples


def make_data(binary, tmp):
    data = os.path.join(tmp, "data")
    # ImageNet-like: 2000 photo-like JPEGs, shorter side 300-500 px.
    subprocess.run([binary, "make-dataset", f"--out={data}", "--classes=10",
                    "--images_per_class=200", "--min_short_side=300", "--max_short_side=500"],
                   check=True, stdout=subprocess.DEVNULL)
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="bazel-bin/runtime/flowloader")
    ap.add_argument("--base_bin", default="", help="flowloader built before several views")
    ap.add_argument("--data", default="", help="an ImageFolder; default: made in a temp dir")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch_size", type=int, default=64)
    ap.add_argument("--num_workers", type=int, default=2)
    ap.add_argument("--graphs", default="one,two,two+96,default",
                    help="which graphs to run (default alone: the regression check)")
    args = ap.parse_args()
    graphs = args.graphs.split(",")

    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.abspath(args.data) if args.data else make_data(args.bin, tmp)
        runs = {name: ["--spec=" + write_spec(tmp, name, data, args)] for name in STAGES}
        default_args = [f"--data={data}", f"--batch_size={args.batch_size}",
                        f"--num_workers={args.num_workers}", "--prefetch_batches=3",
                        f"--epochs={args.epochs}", "--seed=0"]
        plan = [(name, args.bin, run) for name, run in runs.items() if name in graphs]
        if "default" in graphs:
            plan.append(("default", args.bin, default_args))
        if args.base_bin and "default" in graphs:
            plan.append(("default@base", args.base_bin, default_args))
        per_sample = {name: [] for name, _, _ in plan}
        for rep in range(args.reps):
            for name, binary, run_args in plan:  # Alternating: each rep runs every graph.
                per_sample[name].append(run_once(binary, run_args, tmp))
            print(f"rep {rep + 1}/{args.reps}: " + ", ".join(
                f"{n} {v[-1] * 1e3:.3f}" for n, v in per_sample.items()) + " ms CPU/sample",
                  flush=True)

    med = {name: statistics.median(v) for name, v in per_sample.items()}
    print(f"\nmedians of {args.reps} (CPU ms per sample, {args.num_workers} workers, "
          f"batch {args.batch_size}):")
    for name, v in med.items():
        print(f"  {name:13s} {v * 1e3:.3f}")
    ok = True
    if "two" in med and "one" in med:
        two = med["two"] / med["one"]
        ok &= two <= 1.5
        print(f"two 224² views / one view: {two:.2f}x (target <= 1.5x) "
              f"{'PASS' if two <= 1.5 else 'FAIL'}")
    if "two+96" in med and "one" in med:
        print(f"two 224² + 96² / one view: {med['two+96'] / med['one']:.2f}x")
    if "default@base" in med:
        change = med["default"] / med["default@base"] - 1
        ok &= change <= 0.03
        print(f"default graph vs base build: {change * 100:+.1f}% CPU per sample "
              f"(target <= +3%) {'PASS' if change <= 0.03 else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
