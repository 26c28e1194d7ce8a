#!/usr/bin/python3
# torch_loader.py: the PyTorch side of the benchmark, one epoch of a standard DataLoader.
#
#   /usr/bin/python3 torch_loader.py --data=DIR --transform=train|eval \
#       [--num_workers=2 --batch_size=64 --image_size=224 --seed=0 --device=cpu|cuda]
#
# torchvision ImageFolder with the reference ImageNet transforms
#   train: RandomResizedCrop(224), RandomHorizontalFlip(), ToTensor(), Normalize(ImageNet)
#   eval:  Resize(256), CenterCrop(224), ToTensor(), Normalize(ImageNet)
# DataLoader(batch_size, num_workers, shuffle = train, pin_memory=False, default
# prefetch_factor=2), torch.set_num_threads(1) in each worker as is typical. The consumer
# only counts rows; with --device=cuda it runs as a GPU training loop feeds itself:
# pin_memory=True and each batch copied with .to("cuda", non_blocking=True). Prints one JSON line with wall-clock timestamps (time.time()):
#   t_script (first line of this file, before `import torch`), t_imported, t_first (first
#   batch in hand), t_end (last batch in hand) and, if the parent set BENCH_SPAWN_TIME
#   (its time.time() just before spawning us), the figures measured from the spawn.
# Must run under Debian's /usr/bin/python3 (python3-torch 1.13, python3-torchvision 0.14).
import time

T_SCRIPT = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def _worker_init(_worker_id):
    import torch

    torch.set_num_threads(1)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", required=True)
    p.add_argument("--transform", choices=["train", "eval"], default="train")
    p.add_argument("--num_workers", type=int, default=2)
    p.add_argument("--batch_size", type=int, default=64)
    p.add_argument("--image_size", type=int, default=224)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = p.parse_args()

    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms

    t_imported = time.time()
    torch.manual_seed(a.seed)
    normalize = transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)
    if a.transform == "train":
        tf = transforms.Compose([
            transforms.RandomResizedCrop(a.image_size),
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            normalize,
        ])
    else:
        tf = transforms.Compose([
            transforms.Resize(a.image_size * 256 // 224),
            transforms.CenterCrop(a.image_size),
            transforms.ToTensor(),
            normalize,
        ])
    dataset = datasets.ImageFolder(a.data, transform=tf)
    loader = DataLoader(
        dataset,
        batch_size=a.batch_size,
        shuffle=(a.transform == "train"),
        num_workers=a.num_workers,
        pin_memory=(a.device == "cuda"),
        worker_init_fn=_worker_init if a.num_workers > 0 else None,
    )
    t_first = None
    first_rows = 0
    samples = 0
    batches = 0
    shape = None
    for images, labels in loader:
        if a.device == "cuda":
            images = images.to("cuda", non_blocking=True)
            torch.cuda.synchronize()
        if t_first is None:
            t_first = time.time()
            first_rows = images.shape[0]
            shape = list(images.shape)
        samples += images.shape[0]
        batches += 1
    t_end = time.time()
    if t_first is None:
        t_first = t_end

    out = {
        "samples": samples,
        "batches": batches,
        "dataset_size": len(dataset),
        "batch_shape": shape,
        "num_workers": a.num_workers,
        "batch_size": a.batch_size,
        "transform": a.transform,
        "device": a.device,
        "torch": torch.__version__,
        "t_script": T_SCRIPT,
        "t_imported": t_imported,
        "t_first": t_first,
        "t_end": t_end,
        "import_seconds": t_imported - T_SCRIPT,
        "first_batch_seconds_from_script": t_first - T_SCRIPT,
        # After the first batch: rows of the later batches over the time they took.
        "images_per_second_after_first_batch":
            (samples - first_rows) / (t_end - t_first) if t_end > t_first else 0.0,
        "images_per_second_from_script": samples / (t_end - T_SCRIPT),
    }
    spawn = os.environ.get("BENCH_SPAWN_TIME")
    if spawn:
        spawn = float(spawn)
        out["first_batch_seconds_from_spawn"] = t_first - spawn
        out["images_per_second_from_spawn"] = samples / (t_end - spawn)
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
