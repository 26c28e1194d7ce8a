"""random_vertical_flip: F.vflip, applied with probability p."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [Parity("random_vertical_flip()", [], lambda pil, p: F.vflip(pil), max_diff=0)]

DISTRIBUTION = [
    Distribution("random_vertical_flip()", 64, 64, None, applied=0.5),
    Distribution("random_vertical_flip(p=0.3)", 64, 64, None, applied=0.3),
]

REFUSED = [("random_vertical_flip(p=two)", "random_vertical_flip: p must be a number (the probability: 1 or more always applies, 0 or less never)")]
