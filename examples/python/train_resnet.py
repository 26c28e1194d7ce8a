#!/usr/bin/python3
"""train_resnet.py: torchvision's resnet18 (random init) trained on CPU from either
loader, printing step time, epoch time and the share of time the loop waited for data.

    bazel build -c opt //python:flowloader
    PYTHONPATH=bazel-bin/python /usr/bin/python3 examples/python/train_resnet.py \
        --data=.sample_data --loader=flowloader --steps=300
    /usr/bin/python3 examples/python/train_resnet.py --data=.sample_data --loader=torch

--loader=torch is the usual ImageFolder + RandomResizedCrop/flip/ToTensor/Normalize in a
torch.utils.data.DataLoader(num_workers); --loader=flowloader the same recipe from
flowloader.DataLoader with the same batch size and workers. Images are small by default
(--image_size=64) so a few hundred steps run on 2 CPU cores in CI. Each epoch prints one
line; the last line is a JSON summary (steps, images/s, wait share) for scripts.
"""

import argparse
import json
import os
import time

import torch
import torchvision

IMAGENET_MEAN = [0.485, 0.456, 0.406]
IMAGENET_STD = [0.229, 0.224, 0.225]


def torch_loader(args):
    from torchvision import transforms
    recipe = transforms.Compose([
        transforms.RandomResizedCrop(args.image_size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD),
    ])
    dataset = torchvision.datasets.ImageFolder(args.data, transform=recipe)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                                         num_workers=args.num_workers, drop_last=True,
                                         persistent_workers=args.num_workers > 0)
    return loader, len(dataset.classes)


def flowloader_loader(args):
    import flowloader
    loader = flowloader.DataLoader(args.data, batch_size=args.batch_size,
                                   num_workers=args.num_workers, image_size=args.image_size,
                                   drop_last=True, seed=args.seed)
    # ImageFolder's classes are its sub-folders (flowloader labels them the same way).
    classes = sum(os.path.isdir(os.path.join(args.data, d)) for d in os.listdir(args.data))
    return loader, classes


def train(args):
    torch.manual_seed(args.seed)
    loader, classes = (torch_loader if args.loader == "torch" else flowloader_loader)(args)
    model = torchvision.models.resnet18(num_classes=max(classes, args.classes))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    steps = 0
    total_wait = total_step = 0.0
    images_seen = 0
    start = time.monotonic()
    epoch = 0
    while steps < args.steps:
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        epoch_start = time.monotonic()
        wait = step_time = 0.0
        epoch_steps = 0
        asked = time.monotonic()
        for images, labels in loader:
            got = time.monotonic()
            wait += got - asked
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            asked = time.monotonic()
            step_time += asked - got
            epoch_steps += 1
            images_seen += images.shape[0]
            steps += 1
            if steps >= args.steps:
                break
        epoch_seconds = time.monotonic() - epoch_start
        total_wait += wait
        total_step += step_time
        print(f"{args.loader} epoch {epoch}: {epoch_steps} steps in {epoch_seconds:.2f} s, "
              f"step {1000 * step_time / max(epoch_steps, 1):.1f} ms, "
              f"waited for data {wait / max(epoch_seconds, 1e-9):.1%} of the epoch, "
              f"loss {loss.item():.3f}", flush=True)
        epoch += 1
    wall = time.monotonic() - start
    summary = {"loader": args.loader, "steps": steps, "epochs": epoch, "seconds": wall,
               "images_per_second": images_seen / wall,
               "step_ms": 1000 * total_step / max(steps, 1),
               "consumer_wait_share": total_wait / wall, "final_loss": loss.item()}
    if hasattr(loader, "close"):
        loader.close()
    print(json.dumps(summary), flush=True)
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--loader", choices=["torch", "flowloader"], default="flowloader")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--image_size", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10,
                        help="model outputs, at least the dataset's classes")
    parser.add_argument("--seed", type=int, default=0)
    train(parser.parse_args())


if __name__ == "__main__":
    main()
