"""random_rotation: F.rotate on PIL images (Image.rotate, which takes its 90/180/270
transposes, else Image.transform(AFFINE)); RandomRotation.get_params for the angle.

Exact for nearest, bilinear and bicubic: PIL's arithmetic, restated.
"""
import numpy as np
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Distribution, Parity

MODES = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
         "nearest": T.InterpolationMode.NEAREST}


def rotate(mode="nearest", expand=False, fill=0):
    return lambda pil, p: F.rotate(pil, p[0], MODES[mode], expand, None, fill)


PARITY = [
    Parity("random_rotation(degrees=45)", [a], rotate(), max_diff=0)
    for a in [33.7, -61.25, 0.0, 90.0, 180.0, 270.0, -90.0, 405.5, 1e-9]
] + [
    Parity("random_rotation(degrees=45, expand=true)", [a], rotate(expand=True), max_diff=0)
    for a in [33.7, -12.0, 90.0, 270.0, 180.0, 135.0]
] + [
    Parity(f"random_rotation(degrees=45, interpolation={m}, fill=[10, 200, 30])", [a],
           rotate(m, fill=[10, 200, 30]), max_diff=0)
    for m in ["bilinear", "bicubic"] for a in [17.3, -44.9, 90.0]
] + [
    Parity("random_rotation(degrees=45, interpolation=bilinear, expand=true, fill=77)",
           [-28.6], rotate("bilinear", True, 77), max_diff=0),
]


def angles(lo, hi):
    return lambda w, h, n: np.array([[T.RandomRotation.get_params([lo, hi])]
                                     for _ in range(n)])


DISTRIBUTION = [
    Distribution("random_rotation(degrees=30)", 64, 64, angles(-30.0, 30.0), applied=1.0),
    Distribution("random_rotation(degrees=[10, 170], expand=true)", 64, 48,
                 angles(10.0, 170.0)),
]

REFUSED = [
    ("random_rotation(degrees=-5)", "random_rotation: degrees must be a number >= 0"),
    ("random_rotation(degrees=[1, 2, 3])", "degrees must be a number >= 0 or [min, max]"),
    ("random_rotation(degrees=[20, 10])", "degrees must be a number >= 0 or [min, max] with "
                                          "min <= max, got [20, 10]"),
    ("random_rotation(degrees=10, center=[3])", "random_rotation: center must be null or [x, y]"),
    ("random_rotation(degrees=10, fill=3000000000)", "random_rotation: fill must be"),
    ("random_rotation(degrees=10, fill=[1, 2])", "fill must be a number or [r, g, b]"),
    ("random_rotation(degrees=10, interpolation=box)", "interpolation must be"),
    ("random_rotation(degrees=10, expand=2)", "random_rotation: expand must be true or false"),
]
