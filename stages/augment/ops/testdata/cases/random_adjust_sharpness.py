"""random_adjust_sharpness: F.adjust_sharpness (ImageEnhance.Sharpness: a blend with the
SMOOTH-filtered image) on PIL images, exact; tiny images (under 3 x 3 PIL copies them)."""
import numpy as np
import torchvision.transforms.functional as F
from PIL import Image
from harness import Distribution, Parity


def tiny_images():
    rng = np.random.default_rng(9)
    return [Image.fromarray(rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8), "RGB")
            for h, w in ((1, 1), (2, 2), (3, 3), (1, 9), (7, 2), (3, 5), (4, 3))]


PARITY = [
    Parity(f"random_adjust_sharpness(sharpness_factor={f})", [],
           lambda pil, p, f=f: F.adjust_sharpness(pil, f), max_diff=0, images=tiny_images)
    for f in (0, 0.3, 0.5, 1, 1.5, 2, 5.3)
]

DISTRIBUTION = [
    Distribution("random_adjust_sharpness(sharpness_factor=2)", 64, 64, None, applied=0.5),
    Distribution("random_adjust_sharpness(sharpness_factor=0.5, p=0.25)", 64, 64, None,
                 applied=0.25),
]

REFUSED = [
    ("random_adjust_sharpness(sharpness_factor=[1, 2])",
     "random_adjust_sharpness: sharpness_factor must be"),
]
