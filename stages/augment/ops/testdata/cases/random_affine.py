"""random_affine: F.affine on PIL images (Image.transform(AFFINE) with
_get_inverse_affine_matrix about the centre); RandomAffine.get_params.

Exact for nearest (PIL's scale, 16.16 fixed-point and float engines), bilinear and
bicubic: PIL's arithmetic, restated.
"""
import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity

MODES = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
         "nearest": T.InterpolationMode.NEAREST}


def affine(mode="nearest", fill=0):
    return lambda pil, p: F.affine(pil, p[0], [int(p[1]), int(p[2])], p[3], [p[4], p[5]],
                                   MODES[mode], fill)


PARAMS = [
    [0.0, 5, -3, 1.0, 0.0, 0.0],      # Translation only: PIL's scale engine.
    [0.0, 0, 0, 0.7, 0.0, 0.0],       # Scale only.
    [0.0, -4, 2, 1.9, 0.0, 0.0],
    [23.5, 4, -7, 1.2, 12.0, -5.0],   # Fixed-point engine.
    [-170.25, 0, 0, 0.8, -30.0, 20.0],
    [90.0, 3, 3, 1.0, 0.0, 0.0],
    [7.0, 1, 0, 0.004, 0.0, 0.0],     # Coordinates past 32768: the float engine.
]

PARITY = [
    Parity("random_affine(degrees=10)", p, affine(), max_diff=0) for p in PARAMS
] + [
    Parity(f"random_affine(degrees=10, interpolation={m})", p, affine(m), max_diff=0)
    for m in ["bilinear", "bicubic"] for p in PARAMS[1:5]
] + [
    Parity("random_affine(degrees=10, fill=[255, 128, 0])", PARAMS[3],
           affine(fill=[255, 128, 0]), max_diff=0),
    Parity("random_affine(degrees=10, interpolation=bilinear, fill=9)", PARAMS[4],
           affine("bilinear", 9), max_diff=0),
]


def draws(degrees, translate, scale, shear):
    def draw(width, height, n):
        rows = []
        for _ in range(n):
            angle, (tx, ty), s, (shx, shy) = T.RandomAffine.get_params(
                degrees, translate, scale, shear, [width, height])
            rows.append([angle, tx, ty, s, shx, shy])
        return np.array(rows)
    return draw


DISTRIBUTION = [
    Distribution("random_affine(degrees=15, translate=[0.1, 0.2], scale=[0.8, 1.2], "
                 "shear=[-5, 5, -3, 8])", 97, 75,
                 draws([-15.0, 15.0], [0.1, 0.2], [0.8, 1.2], [-5.0, 5.0, -3.0, 8.0]),
                 applied=1.0),
    Distribution("random_affine(degrees=[-30, 10], shear=20)", 64, 64,
                 draws([-30.0, 10.0], None, None, [-20.0, 20.0])),
]

REFUSED = [
    ("random_affine(degrees=-1)", "random_affine: degrees must be a number >= 0"),
    ("random_affine(degrees=[5])", "random_affine: degrees must be"),
    ("random_affine(translate=[0.5, 1.5])", "random_affine: translate must be null or [a, b]"),
    ("random_affine(translate=0.1)", "translate must be null or [a, b]"),
    ("random_affine(scale=[0, 1])", "random_affine: scale must be null or [min, max]"),
    ("random_affine(scale=[1.2, 0.8])", "scale must be null or [min, max] with 0 < min <= max"),
    ("random_affine(shear=[1, 2, 3])", "random_affine: shear must be"),
    ("random_affine(shear=-4)", "shear must be"),
    ("random_affine(shear=[10, 5])", "shear must be"),
    ("random_affine(center=[3, 3, 3])", "random_affine: center must be null or [x, y]"),
    ("random_affine(fill=-3000000000)", "random_affine: fill must be"),
]
