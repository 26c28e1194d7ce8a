"""random_perspective: F.perspective on PIL images (Image.transform(PERSPECTIVE) with
_get_perspective_coeffs); RandomPerspective.get_params for the end points.

PIL's filters and map, restated; the coefficients are solved in double where
torchvision solves them in float32, so a few pixels near a pixel edge take the
neighbour: bounded by PSNR.
"""
import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity

MODES = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
         "nearest": T.InterpolationMode.NEAREST}


def perspective(mode="bilinear", fill=0):
    def ref(pil, p):
        w, h = pil.size
        start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        end = [[int(p[2 * i]), int(p[2 * i + 1])] for i in range(4)]
        return F.perspective(pil, start, end, MODES[mode], fill)
    return ref


def endpoints(scale, seed):
    """get_params' end points for the image's size (torch's draws, a fixed seed)."""
    def params(pil):
        torch.manual_seed(seed)
        _, end = T.RandomPerspective.get_params(pil.size[0], pil.size[1], scale)
        return [float(v) for point in end for v in point]
    return params


def inset(pil):
    """Every corner moved in by a fifth of the side: a fixed, strong warp."""
    w, h = pil.size
    dx, dy = w // 5, h // 5
    return [dx, dy, w - 1 - dx, 0, w - 1, h - 1 - dy, 0, h - 1]


PARITY = [
    Parity(f"random_perspective(interpolation={m})", endpoints(0.5, seed), perspective(m),
           min_psnr=30)
    for m in ["bilinear", "nearest", "bicubic"] for seed in [0, 1]
] + [
    Parity("random_perspective(distortion_scale=0.9, fill=[255, 128, 0])", endpoints(0.9, 3),
           perspective(fill=[255, 128, 0]), min_psnr=30),
    Parity("random_perspective(interpolation=nearest, fill=7)", inset,
           perspective("nearest", 7), min_psnr=30),
    # No distortion: the identity here; torchvision's float32 solve is ~1e-7 off it, so
    # its bilinear taps move by that much: within 1 level.
    Parity("random_perspective(distortion_scale=0)", endpoints(0.0, 0), perspective(),
           max_diff=1),
]


def draws(scale):
    def draw(width, height, n):
        rows = []
        for _ in range(n):
            _, end = T.RandomPerspective.get_params(width, height, scale)
            rows.append([v for point in end for v in point])
        return np.array(rows, dtype=np.float64)
    return draw


DISTRIBUTION = [
    Distribution("random_perspective(distortion_scale=0.5)", 97, 75, draws(0.5), applied=0.5),
    Distribution("random_perspective(distortion_scale=0.2, p=1)", 64, 48, draws(0.2),
                 applied=1.0),
]

REFUSED = [
    ("random_perspective(distortion_scale=-0.5)",
     "random_perspective: distortion_scale must be a number in [0, 1000000]"),
    ("random_perspective(interpolation=box)", "random_perspective: interpolation must be"),
    ("random_perspective(fill=[1, 2])", "random_perspective: fill must be"),
]
