"""random_equalize: F.equalize (ImageOps.equalize) on PIL images, exact; edge images: a
flat channel, two levels (step 0), a skewed histogram (the 255 clip), one pixel."""
import numpy as np
import torchvision.transforms.functional as F
from PIL import Image
from harness import Distribution, Parity


def edge_images():
    rng = np.random.default_rng(5)
    skewed = np.minimum(rng.exponential(6.0, size=(60, 70, 3)), 255).astype(np.uint8)
    skewed[..., 1] = 200  # A flat channel.
    skewed[0, 0] = (255, 200, 3)
    two = np.zeros((30, 20, 3), np.uint8)
    two[:, 10:] = (40, 41, 250)
    few = rng.integers(0, 4, size=(300, 3, 3), dtype=np.uint8) * 60
    return [Image.fromarray(a, "RGB") for a in (skewed, two, few)] + [
        Image.fromarray(np.array([[[9, 200, 31]]], np.uint8), "RGB")]


PARITY = [Parity("random_equalize()", [], lambda pil, p: F.equalize(pil), max_diff=0,
                 images=edge_images)]

DISTRIBUTION = [
    Distribution("random_equalize()", 64, 64, None, applied=0.5),
    Distribution("random_equalize(p=0.3)", 64, 64, None, applied=0.3),
]

REFUSED = [("random_equalize(p=inf)", "random_equalize: p must be a number (the probability: 1 or more always applies, 0 or less never), got inf")]
