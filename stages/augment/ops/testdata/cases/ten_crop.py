"""ten_crop: F.ten_crop on PIL images (horizontal and vertical flip); Apply(c) is crop c
of torchvision's tuple (five_crop of the image, then of its flip), exact."""
import numpy as np
import torchvision.transforms.functional as F
from harness import Parity
from PIL import Image


def odd():
    """Odd and tiny sizes: 1 x 1, 2 x 3, 5 x 8, 34 x 48."""
    rng = np.random.default_rng(12)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
            for h, w in ((1, 1), (2, 3), (5, 8), (34, 48))]


def reference(size, vflip, c):
    return lambda pil, p: F.ten_crop(pil, size, vflip)[c]


PARITY = [Parity(f"ten_crop(size=1, vertical_flip={str(v).lower()})", [c],
                 reference(1, v, c), max_diff=0, images=odd)
          for v in (False, True) for c in range(10)]
PARITY += [Parity(f"ten_crop(size={text}, vertical_flip={str(v).lower()})", [c],
                  reference(size, v, c), max_diff=0)
           for text, size in (("[21, 30]", [21, 30]), ("[33, 47]", [33, 47]))
           for v in (False, True) for c in range(10)]

DISTRIBUTION = []

REFUSED = [("ten_crop(size=-1)", "ten_crop: size must be"),
           ("ten_crop(vertical_flip=[1, 2])", "ten_crop: vertical_flip must be true or false")]
