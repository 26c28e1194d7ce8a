"""random_photometric_distort: the detection reference's RandomPhotometricDistort
(torchvision references/detection/transforms.py at v0.14.0, forward() on a PIL image):
brightness, contrast (before or after saturation and hue), saturation, hue, then the
channel permutation through pil_to_tensor / convert_image_dtype / to_pil_image.

Params: [brightness, contrast_before, contrast, saturation, hue, c0, c1, c2], a factor
not applied as nan, c = -1 without permutation. Exact (max_diff 0): the colour kernels
are color_jitter's, exact against PIL.
"""
import math

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity

NAN = float("nan")


def reference(pil, p):
    # RandomPhotometricDistort.forward with the adjustments' outcomes given.
    img = pil
    if not math.isnan(p[0]):
        img = F.adjust_brightness(img, p[0])
    contrast_before = p[1] != 0
    if contrast_before and not math.isnan(p[2]):
        img = F.adjust_contrast(img, p[2])
    if not math.isnan(p[3]):
        img = F.adjust_saturation(img, p[3])
    if not math.isnan(p[4]):
        img = F.adjust_hue(img, p[4])
    if not contrast_before and not math.isnan(p[2]):
        img = F.adjust_contrast(img, p[2])
    if p[5] >= 0:
        permutation = [int(c) for c in p[5:8]]
        t = F.convert_image_dtype(F.pil_to_tensor(img))
        t = t[..., permutation, :, :]
        img = F.to_pil_image(t)
    return img


PARITY = [
    Parity("random_photometric_distort()", [1.1, 1, 0.6, 1.4, 0.03, 2, 0, 1], reference,
           max_diff=0),
    Parity("random_photometric_distort()", [0.9, 0, 1.3, 0.7, -0.04, -1, -1, -1], reference,
           max_diff=0),
    Parity("random_photometric_distort()", [NAN, 0, NAN, NAN, NAN, 1, 2, 0], reference,
           max_diff=0),
    Parity("random_photometric_distort(brightness=[0.5, 1.5])",
           [1.45, 1, NAN, 0.55, NAN, 0, 2, 1], reference, max_diff=0),
]


def draws(p=0.5, brightness=(0.875, 1.125), contrast=(0.5, 1.5), saturation=(0.5, 1.5),
          hue=(-0.05, 0.05)):
    # forward()'s draws: torch.rand(7), each sub-ColorJitter's get_params (its factor),
    # torch.randperm(3).
    def factor(rng_range, index):
        args = [None, None, None, None]
        args[index] = rng_range
        return float(T.ColorJitter.get_params(*args)[1 + index])

    def draw(width, height, n):
        rows = []
        for _ in range(n):
            r = torch.rand(7)
            b = factor(brightness, 0) if r[0] < p else NAN
            before = bool(r[1] < 0.5)
            c = factor(contrast, 1) if before and r[2] < p else NAN
            s = factor(saturation, 2) if r[3] < p else NAN
            h = factor(hue, 3) if r[4] < p else NAN
            if not before and r[5] < p:
                c = factor(contrast, 1)
            perm = torch.randperm(3).tolist() if r[6] < p else [-1, -1, -1]
            rows.append([b, 1.0 if before else 0.0, c, s, h] + perm)
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("random_photometric_distort()", 64, 48, draws(), applied=1.0,
                 joint=[(5, 6, 7)]),
    Distribution("random_photometric_distort(p=0.8, hue=[-0.2, 0.1])", 64, 48,
                 draws(p=0.8, hue=(-0.2, 0.1)), applied=1.0, joint=[(5, 6, 7)]),
]

REFUSED = [
    ("random_photometric_distort(brightness=0.5)",
     "random_photometric_distort: brightness must be [min, max] within [0, 1000]"),
    ("random_photometric_distort(hue=[-0.6, 0.1])", "hue must be [min, max] within [-0.5, 0.5]"),
    ("random_photometric_distort(contrast=[1.5, 0.5])", "contrast must be"),
    ("random_photometric_distort(p=[2])", "p must be"),
]
