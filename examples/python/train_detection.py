#!/usr/bin/python3
"""train_detection.py: torchvision's fasterrcnn_mobilenet_v3_large_320_fpn (random init,
weights=None, weights_backbone=None) trained for a few steps on CPU from flowloader's
detection batches, on data `flowloader make-dataset --task=detection` generates.

    bazel build //python:flowloader //runtime:flowloader
    bazel-bin/runtime/flowloader make-dataset --task=detection --out=.det_data --images=64
    PYTHONPATH=bazel-bin/python /usr/bin/python3 examples/python/train_detection.py \\
        --data=.det_data --steps=5

flowloader.DataLoader(images_dir, annotations=instances.json, transform=Compose) yields
(images, targets): a list of image tensors and a list of dicts {"boxes", "labels",
"masks", "iscrowd", "area", "image_id"}, the form the model takes, each tensor a view of
the batch. The recipe is torchvision's own for its R-CNNs (GeneralizedRCNNTransform:
shorter side to min_size, longer at most max_size, batched padded to a multiple of 32),
at a small size: Resize(image_size, max_size) keeps each image's aspect ratio, and
size_divisibility=32 pads the batch's images into one tensor (images is a
flowloader.PaddedImages: the list of [3, h, w] views, .tensors, .image_sizes). The labels are COCO's category ids mapped to 1..C (0 is the background), so the
model has C + 1 classes. Each step prints its losses; the last line is a JSON summary.
"""

import argparse
import json
import os
import time

import torch
import torchvision


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="make-dataset --task=detection output")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch_size", type=int, default=4)
    parser.add_argument("--num_workers", type=int, default=2)
    parser.add_argument("--image_size", type=int, default=160, help="shorter side")
    parser.add_argument("--max_size", type=int, default=267,
                        help="longer side at most (torchvision's 800/1333 ratio)")
    args = parser.parse_args()

    import flowloader
    from flowloader import transforms as T
    annotations = os.path.join(args.data, "annotations", "instances.json")
    with open(annotations) as f:
        classes = len(json.load(f)["categories"])
    loader = flowloader.DataLoader(
        os.path.join(args.data, "images"), annotations=annotations,
        batch_size=args.batch_size, num_workers=args.num_workers, skip_empty=True,
        size_divisibility=32,
        transform=T.Compose([T.Resize(args.image_size, max_size=args.max_size),
                             T.RandomHorizontalFlip(), T.ToTensor()]))
    # The model resizes its inputs to min_size / max_size itself: the loader's sizes
    # already are those, so its resize keeps them.
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=classes + 1,
        min_size=args.image_size, max_size=args.max_size)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step, start, losses = 0, time.time(), []
    while step < args.steps:
        for images, targets in loader:
            targets = [{"boxes": t["boxes"], "labels": t["labels"]} for t in targets]
            loss_dict = model(images, targets)
            loss = sum(loss_dict.values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            losses.append(float(loss))
            print(f"step {step}: loss {float(loss):.4f} "
                  + " ".join(f"{k} {float(v):.3f}" for k, v in loss_dict.items()), flush=True)
            if step >= args.steps:
                break
    print(json.dumps({"steps": step, "seconds": round(time.time() - start, 2),
                      "first_loss": losses[0], "last_loss": losses[-1]}))


if __name__ == "__main__":
    main()
