"""five_crop: F.five_crop on PIL images; Apply(c) is crop c of torchvision's tuple
(top-left, top-right, bottom-left, bottom-right, centre), exact. Sizes include odd
margins (the centre's round-half-to-even) and the whole image."""
import numpy as np
import torchvision.transforms.functional as F
from harness import Parity
from PIL import Image


def odd():
    """Odd and tiny sizes: 1 x 1 (every crop the image), 2 x 3, 5 x 8, 34 x 48."""
    rng = np.random.default_rng(11)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
            for h, w in ((1, 1), (2, 3), (5, 8), (34, 48))]


def reference(size, c):
    return lambda pil, p: F.five_crop(pil, size)[c]


SIZES = (("1", 1),)  # The odd images include 1 x 1.
PARITY = [Parity(f"five_crop(size={text})", [c], reference(size, c), max_diff=0, images=odd)
          for text, size in SIZES for c in range(5)]
# The shared test images are at least 33 x 47.
PARITY += [Parity(f"five_crop(size={text})", [c], reference(size, c), max_diff=0)
           for text, size in (("32", 32), ("[21, 30]", [21, 30]), ("[33, 47]", [33, 47]))
           for c in range(5)]

DISTRIBUTION = []

REFUSED = [("five_crop(size=0)", "five_crop: size must be"),
           ("five_crop(size=[1, 2, 3])", "five_crop: size must be")]
