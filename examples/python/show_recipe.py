#!/usr/bin/python3
"""show_recipe.py: look at what a recipe does before training, notebook style: call a
flowloader.transforms Compose on a few images and save the results as one PNG grid
(one row per image: the original, then --samples draws of the recipe).

    bazel build -c opt //python:flowloader
    PYTHONPATH=bazel-bin/python /usr/bin/python3 examples/python/show_recipe.py \
        --images=.sample_data --out=recipe.png [--recipe=simclr] [--seed=0]

--images: a folder (searched recursively for .jpg/.jpeg/.png) or nothing, for built-in
synthetic pictures. The same seed gives the same grid (torch's generator, as torchvision).
"""

import argparse
import os

import numpy as np
import torch
from PIL import Image, ImageDraw

import flowloader.transforms as T

RECIPES = {
    # torchvision's ResNet-50 V2 preset, up to the tensor conversion.
    "v2": lambda: T.Compose([T.RandomResizedCrop(176), T.RandomHorizontalFlip(),
                             T.TrivialAugmentWide()]),
    # SimCLR's augmentation (colour distortion, blur, grayscale).
    "simclr": lambda: T.Compose([
        T.RandomResizedCrop(176), T.RandomHorizontalFlip(),
        T.RandomApply([T.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8), T.RandomGrayscale(0.2),
        T.RandomApply([T.GaussianBlur(17)], p=0.5)]),
    # DINO's local crop.
    "dino_local": lambda: T.Compose([
        T.RandomResizedCrop(96, scale=(0.05, 0.4), interpolation=T.InterpolationMode.BICUBIC),
        T.RandomHorizontalFlip(), T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
        T.RandomGrayscale(0.2), T.PILGaussianBlur(0.5)]),
}


def synthetic(n):
    """Stripes, rings and a colour wheel: shapes that show crops, flips and colour."""
    out = []
    for k in range(n):
        y, x = np.mgrid[0:240, 0:320].astype(np.float32)
        r = np.hypot(x - 160, y - 120)
        angle = np.arctan2(y - 120, x - 160)
        img = np.stack([127 + 120 * np.sin(r / (6 + 3 * k)), 127 + 120 * np.cos(angle * (k + 1)),
                        (x / 320 * 255) * (k % 2) + (y / 240 * 255) * (1 - k % 2)], -1)
        pil = Image.fromarray(img.clip(0, 255).astype(np.uint8), "RGB")
        ImageDraw.Draw(pil).text((10, 10), f"image {k}", fill=(255, 255, 255))
        out.append(pil)
    return out


def load_images(folder, n):
    if not folder:
        return synthetic(n)
    paths = sorted(os.path.join(d, f) for d, _, files in os.walk(folder) for f in files
                   if f.lower().endswith((".jpg", ".jpeg", ".png")))
    if not paths:
        raise SystemExit(f"show_recipe: no .jpg/.jpeg/.png under {folder}")
    return [Image.open(p).convert("RGB") for p in paths[:n]]


def grid(rows, cell):
    """rows of PIL images -> one PIL image, each cell `cell` pixels square."""
    out = Image.new("RGB", (cell * len(rows[0]), cell * len(rows)), (32, 32, 32))
    for r, row in enumerate(rows):
        for c, img in enumerate(row):
            img = img.copy()
            img.thumbnail((cell, cell))
            out.paste(img, (c * cell + (cell - img.width) // 2, r * cell + (cell - img.height) // 2))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", default="")
    parser.add_argument("--count", type=int, default=4, help="images (rows)")
    parser.add_argument("--samples", type=int, default=6, help="draws per image (columns)")
    parser.add_argument("--recipe", default="v2", choices=sorted(RECIPES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="recipe.png")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    recipe = RECIPES[args.recipe]()
    rows = [[img] + [recipe(img) for _ in range(args.samples)]
            for img in load_images(args.images, args.count)]
    grid(rows, 128).save(args.out)
    print(f"{args.out}: {len(rows)} images x {args.samples} draws of {args.recipe}")


if __name__ == "__main__":
    main()
