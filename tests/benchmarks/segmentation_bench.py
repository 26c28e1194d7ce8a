#!/usr/bin/python3
"""segmentation_bench.py: the semantic segmentation recipe, flowloader against PyTorch's
DataLoader with torchvision 0.14 doing the same on PIL image + mask pairs.

    PYTHONPATH=bazel-bin/python /usr/bin/python3 tests/benchmarks/segmentation_bench.py \
        --bin=bazel-bin/runtime/flowloader [--reps=5] [--images=400] [--size=512]

Recipe (both sides): RandomResizedCrop(size, scale=(0.3, 1.0)) of the image (bilinear)
and of its label map (nearest, the same box), RandomHorizontalFlip of both,
ColorJitter(0.4, 0.4, 0.4) of the image, ToTensor + Normalize; masks int64 [N, H, W].
flowloader: flowloader.DataLoader(images, label_maps=..., transform=Compose(...)),
num_workers=2. torch: a map-style Dataset opening the JPEG and the PNG with PIL, the
transforms as torchvision's segmentation references write them (one get_params, then
F.resized_crop / F.hflip on both), DataLoader(num_workers=2). Same data, same cores,
batch 16, one epoch per run after a warm-up run of each; the runs alternate (torch,
flowloader, flowloader, torch, ...), images/s counted after the first batch, medians.

Data: `flowloader make-dataset --task=segmentation` (JPEGs of 384-512 px sides with
drawn shapes, exact PNG label maps) under <repo>/.bench_data/segmentation. Writes
results/segmentation.md and .json. A program, not a unit test.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch
from PIL import Image

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


class PairDataset(torch.utils.data.Dataset):
    """(image, mask) pairs read with PIL, transformed as torchvision's references do."""

    def __init__(self, root, size):
        import torchvision.transforms as T
        names = sorted(os.listdir(os.path.join(root, "images")))
        self.pairs = [(os.path.join(root, "images", n),
                       os.path.join(root, "label_maps", n[:-4] + ".png")) for n in names]
        self.size = size
        self.jitter = T.ColorJitter(0.4, 0.4, 0.4)

    def __len__(self):
        return len(self.pairs)

    def __getitem__(self, i):
        import torchvision.transforms as T
        import torchvision.transforms.functional as F
        image = Image.open(self.pairs[i][0]).convert("RGB")
        mask = Image.open(self.pairs[i][1])
        top, left, h, w = T.RandomResizedCrop.get_params(image, (0.3, 1.0), (3 / 4, 4 / 3))
        size = [self.size, self.size]
        image = F.resized_crop(image, top, left, h, w, size, T.InterpolationMode.BILINEAR)
        mask = F.resized_crop(mask, top, left, h, w, size, T.InterpolationMode.NEAREST)
        if torch.rand(1) < 0.5:
            image, mask = F.hflip(image), F.hflip(mask)
        image = self.jitter(image)
        image = F.normalize(F.to_tensor(image), MEAN, STD)
        return image, torch.as_tensor(np.array(mask), dtype=torch.int64)


def torch_loader(root, size, batch):
    return torch.utils.data.DataLoader(PairDataset(root, size), batch_size=batch,
                                       shuffle=True, num_workers=2)


def flowloader_loader(root, size, batch):
    import flowloader
    from flowloader import transforms as T
    compose = T.Compose([T.RandomResizedCrop(size, scale=(0.3, 1.0)), T.RandomHorizontalFlip(),
                         T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(), T.Normalize(MEAN, STD)])
    return flowloader.DataLoader(os.path.join(root, "images"),
                                 label_maps=os.path.join(root, "label_maps"),
                                 batch_size=batch, num_workers=2, transform=compose)


def timed_epoch(loader):
    """Images/s over one epoch, counted after the first batch; checks the masks."""
    start, count = None, 0
    for images, masks in loader:
        assert masks.dtype == torch.int64 and masks.shape[0] == images.shape[0]
        if start is None:
            start = time.perf_counter()
            continue
        count += images.shape[0]
    return count / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(REPO, "bazel-bin/runtime/flowloader"))
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    root = os.path.join(REPO, ".bench_data", f"segmentation_{args.images}")
    os.makedirs(os.path.dirname(root), exist_ok=True)
    subprocess.run([args.bin, "make-dataset", "--task=segmentation", f"--out={root}",
                    f"--images={args.images}", "--min_short_side=384", "--max_short_side=512"],
                   check=True, stdout=subprocess.DEVNULL)
    loaders = {"torch": lambda: torch_loader(root, args.size, args.batch),
               "flowloader": lambda: flowloader_loader(root, args.size, args.batch)}
    made = {name: make() for name, make in loaders.items()}
    for name in made:  # Warm-up: page cache, worker start-up paths.
        timed_epoch(made[name])
    rates = {name: [] for name in made}
    for rep in range(args.reps):
        order = ["torch", "flowloader"] if rep % 2 == 0 else ["flowloader", "torch"]
        for name in order:
            rates[name].append(timed_epoch(made[name]))
            print(f"rep {rep} {name}: {rates[name][-1]:.1f} img/s", flush=True)
    medians = {name: statistics.median(r) for name, r in rates.items()}
    ratio = medians["flowloader"] / medians["torch"]
    load = os.getloadavg()[0]
    result = {"recipe": f"RRC {args.size} + label map, flip, ColorJitter, Normalize",
              "images": args.images, "batch": args.batch, "reps": args.reps,
              "images_per_s": rates, "median": medians, "ratio": ratio, "load1": load,
              "date": time.strftime("%Y-%m-%d")}
    out = os.path.join(REPO, "tests", "benchmarks", "results")
    with open(os.path.join(out, "segmentation.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out, "segmentation.md"), "w") as f:
        f.write(f"# Semantic segmentation recipe ({result['date']})\n\n"
                f"`tests/benchmarks/segmentation_bench.py --reps={args.reps} "
                f"--images={args.images} --size={args.size}`: {result['recipe']}, batch "
                f"{args.batch}, 2 workers, 2 cores, load {load:.1f} at the end.\n\n"
                "| | flowloader | torch DataLoader(num_workers=2) + torchvision 0.14 | ratio |\n"
                "| --- | ---: | ---: | ---: |\n"
                f"| images/s, median of {args.reps} | {medians['flowloader']:.0f} | "
                f"{medians['torch']:.0f} | {ratio:.1f}× |\n\n"
                "Runs (images/s): flowloader "
                + ", ".join(f"{r:.0f}" for r in rates["flowloader"]) + "; torch "
                + ", ".join(f"{r:.0f}" for r in rates["torch"]) + ".\n")
    print(json.dumps({"median": medians, "ratio": round(ratio, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
