"""random_autocontrast: F.autocontrast (ImageOps.autocontrast) on PIL images, exact;
edge images: a flat channel (left alone), a narrow range, two levels, one pixel."""
import numpy as np
import torchvision.transforms.functional as F
from PIL import Image
from harness import Distribution, Parity


def edge_images():
    rng = np.random.default_rng(3)
    narrow = rng.integers(100, 104, size=(20, 30, 3), dtype=np.uint8)
    narrow[..., 2] = 9  # A flat channel.
    two = np.zeros((4, 7, 3), np.uint8)
    two[:, 3:] = (255, 1, 2)
    wide = rng.integers(5, 250, size=(50, 40, 3), dtype=np.uint8)
    return [Image.fromarray(a, "RGB") for a in (narrow, two, wide)] + [
        Image.fromarray(np.array([[[9, 200, 31]]], np.uint8), "RGB")]


PARITY = [Parity("random_autocontrast()", [], lambda pil, p: F.autocontrast(pil), max_diff=0,
                 images=edge_images)]

DISTRIBUTION = [
    Distribution("random_autocontrast()", 64, 64, None, applied=0.5),
    Distribution("random_autocontrast(p=0.7)", 64, 64, None, applied=0.7),
]

REFUSED = [("random_autocontrast(p=[0.5])", "random_autocontrast: p must be a number (the probability: 1 or more always applies, 0 or less never), got [0.5]"),
           ("random_autocontrast(cutoff=2)", "random_autocontrast has no argument 'cutoff'")]
