#!/usr/bin/python3
"""eager_bench: flowloader.transforms called on one image vs torchvision 0.14 on PIL.

    bazel build //python:flowloader
    PYTHONPATH=bazel-bin/python /usr/bin/python3 tests/benchmarks/eager_bench.py \
        [--reps=15] [--loader-images=400] [--only=per_op,compose,loader,noop] [--ops=Flip,Crop]
        [--clock=wall|cpu] [--inputs=pil|float] [--flush]

Prints Markdown tables (docs/performance.md, "Calling transforms directly"):
  per_op:  each transform class called on one PIL RGB image at a time, 224² and 1024²,
           one core (sched_setaffinity to CPU 0, torch.set_num_threads(1)); median
           microseconds per call over `reps` rounds, the two libraries alternating
           within each round, each draw from the same torch seed.
  compose: the torchvision v2 ResNet recipe (RandomResizedCrop(176), flip,
           TrivialAugmentWide, PILToTensor, ConvertImageDtype, Normalize,
           RandomErasing(0.1)) called per image on a 500x375 photo-like image.
  loader:  a plain torch.utils.data.DataLoader(num_workers=2, batch_size=64) over a
           torchvision ImageFolder of JPEGs (made here, 500x375) with the classic train
           recipe from flowloader.transforms or from torchvision; images/s, median.
  noop:    Compose([]) on a 224² PIL image: the calling overhead.
  breakdown (only when named): a DataLoader worker's time per image, one core: PIL's
           JPEG decode, each library's classic train transform, default_collate.

--inputs=float: per_op on a float32 [3, S, S] tensor in [0, 1] (ToTensor's output) for
the classes that take floats, against torchvision's tensor kernels (torch on one thread);
compose: Compose([ToTensor(), RandomResizedCrop(224), RandomHorizontalFlip(),
ColorJitter(.4, .4, .4, .1), Normalize]) per 500x375 PIL image (the ops after ToTensor on
floats in both libraries).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch
import torchvision.transforms as TV
from PIL import Image

import flowloader.transforms as T

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def photo(w, h, seed=0):
    """A photo-like RGB image: smooth gradients, blobs and noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([128 + 100 * np.sin(x / (17 + 5 * c) + y / (29 - 3 * c)) for c in range(3)], -1)
    img += rng.normal(0, 12, img.shape)
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


# Each case's transform, made from a module (flowloader.transforms or torchvision's), so
# both libraries get the same class with the same arguments.
_CASES = {
    "Resize(256)": lambda M: M.Resize(256),
    "Resize(256, antialias=True)": lambda M: M.Resize(256, antialias=True),
    "Resize(256, bicubic)": lambda M: M.Resize(256, interpolation=M.InterpolationMode.BICUBIC),
    "CenterCrop(224)": lambda M: M.CenterCrop(224),
    "RandomResizedCrop(224)": lambda M: M.RandomResizedCrop(224),
    "RandomCrop(200, padding=4)": lambda M: M.RandomCrop(200, padding=4),
    "Pad(16, reflect)": lambda M: M.Pad(16, padding_mode="reflect"),
    "RandomHorizontalFlip(p=1)": lambda M: M.RandomHorizontalFlip(1.0),
    "RandomVerticalFlip(p=1)": lambda M: M.RandomVerticalFlip(1.0),
    "ColorJitter(.4, .4, .4, .1)": lambda M: M.ColorJitter(0.4, 0.4, 0.4, 0.1),
    "ColorJitter(.4, .4, .4)": lambda M: M.ColorJitter(0.4, 0.4, 0.4),
    "Grayscale(3)": lambda M: M.Grayscale(3),
    "GaussianBlur(23)": lambda M: M.GaussianBlur(23),
    "RandomRotation(30)": lambda M: M.RandomRotation(30),
    "RandomRotation(30, bilinear)": lambda M: M.RandomRotation(
        30, interpolation=M.InterpolationMode.BILINEAR),
    "RandomPerspective(p=1)": lambda M: M.RandomPerspective(p=1.0),
    "RandomAffine(15, .1, .9-1.1, 5)": lambda M: M.RandomAffine(15, (0.1, 0.1), (0.9, 1.1), 5),
    "RandomSolarize(128, p=1)": lambda M: M.RandomSolarize(128, 1.0),
    "RandomSolarize(0.5, p=1)": lambda M: M.RandomSolarize(0.5, 1.0),
    "RandomPosterize(4, p=1)": lambda M: M.RandomPosterize(4, 1.0),
    "RandomEqualize(p=1)": lambda M: M.RandomEqualize(1.0),
    "RandomAutocontrast(p=1)": lambda M: M.RandomAutocontrast(1.0),
    "RandomInvert(p=1)": lambda M: M.RandomInvert(1.0),
    "RandomAdjustSharpness(2, p=1)": lambda M: M.RandomAdjustSharpness(2, 1.0),
    "TrivialAugmentWide": lambda M: M.TrivialAugmentWide(),
    "RandAugment": lambda M: M.RandAugment(),
    "AutoAugment": lambda M: M.AutoAugment(),
    "AugMix": lambda M: M.AugMix(),
    "ElasticTransform": lambda M: M.ElasticTransform(),
    "ToTensor": lambda M: M.ToTensor(),
    "ToTensor+Normalize": lambda M: M.Compose([M.ToTensor(), M.Normalize(*IMAGENET)]),
    "Normalize": lambda M: M.Normalize(*IMAGENET),
}


def _cases(names):
    """(name, flowloader's, torchvision's) for each name of _CASES."""
    return [(name, _CASES[name](T), _CASES[name](TV)) for name in names]


def per_op_cases():
    """The cases on PIL images, the torchvision classes with their usual args."""
    return _cases([
        "Resize(256)", "CenterCrop(224)", "RandomResizedCrop(224)",
        "RandomCrop(200, padding=4)", "RandomHorizontalFlip(p=1)",
        "RandomVerticalFlip(p=1)", "ColorJitter(.4, .4, .4, .1)", "ColorJitter(.4, .4, .4)",
        "Grayscale(3)", "GaussianBlur(23)", "RandomRotation(30)",
        "RandomRotation(30, bilinear)", "RandomPerspective(p=1)",
        "RandomAffine(15, .1, .9-1.1, 5)", "RandomSolarize(128, p=1)",
        "RandomPosterize(4, p=1)", "RandomEqualize(p=1)", "RandomAutocontrast(p=1)",
        "RandomInvert(p=1)", "RandomAdjustSharpness(2, p=1)", "TrivialAugmentWide",
        "RandAugment", "AutoAugment", "AugMix", "ElasticTransform", "ToTensor",
        "ToTensor+Normalize"])


def float_cases():
    """The cases on float tensors (the ops float tensors take; solarize's threshold in
    [0, 1])."""
    return _cases([
        "Resize(256)", "Resize(256, antialias=True)", "Resize(256, bicubic)",
        "CenterCrop(224)", "RandomResizedCrop(224)", "RandomCrop(200, padding=4)",
        "Pad(16, reflect)", "RandomHorizontalFlip(p=1)", "RandomVerticalFlip(p=1)",
        "ColorJitter(.4, .4, .4, .1)", "ColorJitter(.4, .4, .4)", "Grayscale(3)",
        "GaussianBlur(23)", "RandomSolarize(0.5, p=1)", "RandomAutocontrast(p=1)",
        "RandomInvert(p=1)", "RandomAdjustSharpness(2, p=1)", "RandomRotation(30)",
        "RandomRotation(30, bilinear)", "RandomAffine(15, .1, .9-1.1, 5)",
        "RandomPerspective(p=1)", "Normalize"])


# The clock of time_calls: wall (time.perf_counter) or this thread's CPU time
# (time.thread_time; --clock=cpu), which on a machine shared with other work leaves out
# the waits for a core that make wall times move by 2x and more under load.
CLOCK = time.perf_counter


# --flush: a buffer rewritten before each timed call (outside its time), so that each
# call finds the image evicted from the caches, as other processes' memory traffic on a
# shared machine leaves it.
FLUSH = None


def time_calls(fn, img, n, seed):
    torch.manual_seed(seed)
    if FLUSH is not None:
        total = 0.0
        for _ in range(n):
            FLUSH[:] += 1
            start = CLOCK()
            fn(img) if img is not None else fn()
            total += CLOCK() - start
        return total / n * 1e6
    start = CLOCK()
    for _ in range(n):
        fn(img) if img is not None else fn()
    return (CLOCK() - start) / n * 1e6


def side_by_side(ours, theirs, img, reps, n):
    """Median µs per call of each, alternating within each round."""
    ours(img), theirs(img)  # Warm.
    a, b = [], []
    for r in range(reps):
        a.append(time_calls(ours, img, n, r))
        b.append(time_calls(theirs, img, n, r))
    return statistics.median(a), statistics.median(b)


def bench_per_op(reps, ops=None, inputs="pil"):
    rows = []
    for size in (224, 1024):
        img = photo(size, size, seed=size)
        if inputs == "float":
            img = TV.ToTensor()(img)
        n = 20 if size == 224 else 3
        for name, ours, theirs in (float_cases() if inputs == "float" else per_op_cases()):
            if ops and not any(o in name for o in ops):
                continue
            a, b = side_by_side(ours, theirs, img, reps, n)
            rows.append((name, f"{size}²", b, a))
            print(f"  {name} {size}: torchvision {b:.0f} µs, flowloader {a:.0f} µs, "
                  f"{b / a:.2f}x", file=sys.stderr)
    form = "float32 [3, S, S] in and out" if inputs == "float" else "PIL RGB in, PIL out"
    print(f"\n| op ({form}) | size | torchvision µs | flowloader µs | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    for name, size, b, a in rows:
        print(f"| {name} | {size} | {b:.0f} | {a:.0f} | {b / a:.2f}× |")


def v2_recipe(M):
    return M.Compose([
        M.RandomResizedCrop(176), M.RandomHorizontalFlip(), M.TrivialAugmentWide(),
        M.PILToTensor(), M.ConvertImageDtype(torch.float), M.Normalize(*IMAGENET),
        M.RandomErasing(0.1)])


def bench_compose(reps):
    img = photo(500, 375, seed=1)
    a, b = side_by_side(v2_recipe(T), v2_recipe(TV), img, reps, 20)
    print("\n| Compose, one image at a time (500x375 PIL in) | torchvision µs | flowloader µs "
          "| ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| torchvision v2 recipe (RRC 176, flip, TrivialAugmentWide, Normalize, "
          f"RandomErasing 0.1) | {b:.0f} | {a:.0f} | {b / a:.2f}× |")


def to_tensor_first(M):
    """A recipe that converts first: every op after ToTensor works on floats."""
    return M.Compose([M.ToTensor(), M.RandomResizedCrop(224), M.RandomHorizontalFlip(),
                      M.ColorJitter(0.4, 0.4, 0.4, 0.1), M.Normalize(*IMAGENET)])


def bench_compose_float(reps):
    img = photo(500, 375)
    a, b = side_by_side(to_tensor_first(T), to_tensor_first(TV), img, reps, 10)
    print("\n| Compose([ToTensor(), RandomResizedCrop(224), flip, ColorJitter(.4, .4, .4, .1), "
          "Normalize]) per 500x375 PIL image | torchvision µs | flowloader µs | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| per image | {b:.0f} | {a:.0f} | {b / a:.2f}× |")


def classic_train(M):
    return M.Compose([M.RandomResizedCrop(224), M.RandomHorizontalFlip(), M.ToTensor(),
                      M.Normalize(*IMAGENET)])


def make_folder(root, n):
    for c in range(4):
        os.makedirs(os.path.join(root, f"c{c}"), exist_ok=True)
    for i in range(n):
        photo(500, 375, seed=i).save(os.path.join(root, f"c{i % 4}", f"{i}.jpg"), quality=90)


def loader_rate(root, transform, epochs=1):
    import torchvision.datasets as datasets
    data = datasets.ImageFolder(root, transform=transform)
    loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=2, shuffle=True)
    start = time.perf_counter()
    count = 0
    for _ in range(epochs):
        for images, _labels in loader:
            count += images.shape[0]
    return count / (time.perf_counter() - start)


def bench_loader(reps, images):
    with tempfile.TemporaryDirectory() as root:
        make_folder(root, images)
        a, b = [], []
        for _ in range(max(3, reps // 5)):
            a.append(loader_rate(root, classic_train(T)))
            b.append(loader_rate(root, classic_train(TV)))
        a, b = statistics.median(a), statistics.median(b)
    print("\n| torch DataLoader(num_workers=2) over ImageFolder, classic train recipe "
          "| torchvision img/s | flowloader.transforms img/s | ratio |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| {images} JPEGs 500x375, batch 64 | {b:.0f} | {a:.0f} | {a / b:.2f}× |")


def bench_breakdown(reps):
    """Where a DataLoader worker's time goes per image: ImageFolder's PIL decode of a
    500x375 JPEG (open + convert("RGB")), each library's classic train transform, and
    the collate of 64 float tensors as a worker's default_collate makes it (torch.stack
    into a new shared-memory tensor), against the same stack into a batch already
    allocated (per image). Wall and CPU time of this thread (time.thread_time: on a
    machine shared with other work, wall time also counts the waits for a core)."""
    import io
    buf = io.BytesIO()
    photo(500, 375, seed=3).save(buf, "JPEG", quality=90)
    data = buf.getvalue()

    def decode():
        return Image.open(io.BytesIO(data)).convert("RGB")

    def worker_collate(batch):
        # default_collate in a worker (get_worker_info() set): a new shared-memory
        # tensor, then one stack into it.
        elem = batch[0]
        storage = elem.storage()._new_shared(sum(x.numel() for x in batch), device=elem.device)
        out = elem.new(storage).resize_(len(batch), *list(elem.size()))
        return torch.stack(batch, 0, out=out)

    img = decode()
    tensors = [classic_train(T)(img) for _ in range(64)]
    uint8s = [T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                         T.PILToTensor()])(img) for _ in range(64)]
    warm = torch.empty((64,) + tuple(tensors[0].shape))
    steps = [("PIL decode + convert(\"RGB\")", decode, 20),
             ("torchvision transform", lambda: classic_train(TV)(img), 20),
             ("flowloader.transforms transform", lambda: classic_train(T)(img), 20),
             ("worker default_collate (new shared-memory batch), per image",
              lambda: worker_collate(tensors), 2),
             ("the same stack into an allocated batch, per image",
              lambda: torch.stack(tensors, 0, out=warm), 2),
             ("worker default_collate of uint8 tensors (PILToTensor's), per image",
              lambda: worker_collate(uint8s), 2)]
    wall = {name: [] for name, _, _ in steps}
    cpu = {name: [] for name, _, _ in steps}
    for r in range(reps):  # Alternating within each round.
        for name, fn, n in steps:
            per = 64 if "per image" in name else 1
            torch.manual_seed(r)
            w0, c0 = time.perf_counter(), time.thread_time()
            for _ in range(n):
                fn()
            wall[name].append((time.perf_counter() - w0) / n * 1e6 / per)
            cpu[name].append((time.thread_time() - c0) / n * 1e6 / per)
    print("\n| DataLoader worker, per image (one core) | wall µs | CPU µs |")
    print("| --- | ---: | ---: |")
    for name, _, _ in steps:
        print(f"| {name} | {statistics.median(wall[name]):.0f} | "
              f"{statistics.median(cpu[name]):.0f} |")


def bench_noop(reps):
    img = photo(224, 224)
    a, b = side_by_side(T.Compose([]), TV.Compose([]), img, reps, 2000)
    c, _ = side_by_side(T.RandomHorizontalFlip(0.0), TV.RandomHorizontalFlip(0.0), img, reps,
                        2000)
    print("\n| calling overhead, 224² PIL | torchvision µs | flowloader µs |")
    print("| --- | ---: | ---: |")
    print(f"| Compose([]) | {b:.1f} | {a:.1f} |")
    print(f"| RandomHorizontalFlip(p=0) (a draw, no pixels) | | {c:.1f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="per_op, compose, noop and breakdown: wall or thread CPU time")
    parser.add_argument("--loader-images", type=int, default=400)
    parser.add_argument("--inputs", choices=["pil", "float"], default="pil",
                        help="per_op and compose: PIL images, or float tensors "
                             "(torchvision's tensor kernels)")
    parser.add_argument("--only", default="per_op,compose,loader,noop")
    parser.add_argument("--flush", action="store_true",
                        help="per_op, compose, noop: rewrite a 96 MiB buffer before each "
                             "timed call (the caches flushed: a shared machine's worst case)")
    parser.add_argument("--ops", default="",
                        help="per_op: only the rows whose name contains one of these "
                             "(comma-separated)")
    args = parser.parse_args()
    global CLOCK, FLUSH
    CLOCK = time.thread_time if args.clock == "cpu" else time.perf_counter
    if args.flush:
        FLUSH = np.zeros(96 << 20, np.uint8)
    only = set(args.only.split(","))
    torch.set_num_threads(1)
    if "loader" in only:  # Two workers on the machine's cores, before pinning.
        bench_loader(args.reps, args.loader_images)
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # One core.
    if "noop" in only:
        bench_noop(args.reps)
    if "breakdown" in only:
        bench_breakdown(args.reps)
    if "compose" in only:
        (bench_compose_float if args.inputs == "float" else bench_compose)(args.reps)
    if "per_op" in only:
        bench_per_op(args.reps, [o for o in args.ops.split(",") if o], args.inputs)


if __name__ == "__main__":
    main()
