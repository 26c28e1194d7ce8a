"""pad: F.pad on PIL images (constant with a fill, and np.pad's edge, reflect and
symmetric patterns, including pads wider than the image), exact."""
import numpy as np
import torchvision.transforms.functional as F
from harness import Parity
from PIL import Image


def tiny():
    """1 x 1, 2 x 3 and 5 x 2 images: every pad wider than the image."""
    rng = np.random.default_rng(5)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
            for h, w in ((1, 1), (2, 3), (5, 2))]


def reference(padding, fill, mode):
    return lambda pil, p: F.pad(pil, padding, fill, mode)


PADDINGS = (("3", 3, 7), ("[1, 4]", [1, 4], 0), ("[0, 2, 5, 1]", [0, 2, 5, 1], 200),
            ("[9, 0, 0, 11]", [9, 0, 0, 11], 1))

PARITY = [
    Parity(f"pad(padding={text}, fill={fill}, padding_mode={mode})", [],
           reference(padding, fill, mode), max_diff=0, images=tiny)
    for mode in ("constant", "edge", "reflect", "symmetric")
    for text, padding, fill in PADDINGS
]

DISTRIBUTION = []

REFUSED = [
    ("pad(padding=-16385)", "pad: padding must be"),
    ("pad(padding=[1, 2, 3])", "pad: padding must be"),
    ("pad(padding_mode=wrap)", "pad: padding_mode must be constant, edge, reflect or symmetric"),
    ("pad(fill=10000000000)", "pad: fill must be"),
]
