"""pil_gaussian_blur: PIL's ImageFilter.GaussianBlur(radius), as DINO's utils.GaussianBlur
and MoCo v3's moco.loader.GaussianBlur apply it (img.filter(...), radius =
random.uniform(min, max)); exact (Pillow's box blur is integer arithmetic).

Radii cover a box radius with whole part 0 (below ~1.41), 1 (DINO's upper range), the
AVX2 path's widest direct box and Pillow's running sums past it, and radius 0. The
flat-and-tiny images put every pixel at an edge.
"""
import random

import numpy as np
from PIL import Image, ImageFilter
from harness import Distribution, Parity


def pil_blur(pil, p):
    return pil.filter(ImageFilter.GaussianBlur(p[0]))


def flat_and_tiny():
    grey = np.full((9, 11, 3), 77, np.uint8)
    two = np.zeros((5, 6, 3), np.uint8)
    two[:, 3:] = (250, 3, 128)
    tall = np.random.default_rng(3).integers(0, 256, (40, 2, 3), dtype=np.uint8)
    return [Image.fromarray(grey, "RGB"), Image.fromarray(two, "RGB"),
            Image.fromarray(tall, "RGB"),
            Image.fromarray(np.array([[[9, 200, 31]]], np.uint8), "RGB")]


PARITY = [
    Parity("pil_gaussian_blur(radius=[0.1, 2.0])", [r], pil_blur, max_diff=0,
           images=flat_and_tiny)
    for r in (0.0, 0.1, 0.37, 1.0, 1.4142135, 1.5, 1.99999, 2.0, 3.3, 7.5, 9.0, 25.0)
]

# random.uniform(min, max), as DINO's and MoCo v3's classes draw it.
def radii(lo, hi):
    return lambda w, h, n: np.array([[random.uniform(lo, hi)] for _ in range(n)])


DISTRIBUTION = [
    Distribution("pil_gaussian_blur(radius=[0.1, 2.0])", 224, 224, radii(0.1, 2.0),
                 applied=1.0),
    Distribution("pil_gaussian_blur(radius=[0.5, 5.0], p=0.5)", 96, 96, radii(0.5, 5.0),
                 applied=0.5),
]

REFUSED = [
    ("pil_gaussian_blur(radius=-1)",
     "pil_gaussian_blur: radius must be a number in [0, 1000] or [min, max] with "
     "0 <= min <= max <= 1000, got -1"),
    ("pil_gaussian_blur(radius=[2.0, 1.0])", "pil_gaussian_blur: radius must be"),
    ("pil_gaussian_blur(radius=[0.1, 2000])", "pil_gaussian_blur: radius must be"),
    ("pil_gaussian_blur(sigma=1)", "pil_gaussian_blur"),
]
