"""random_invert: F.invert (ImageOps.invert) on PIL images, exact."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [Parity("random_invert()", [], lambda pil, p: F.invert(pil), max_diff=0)]

DISTRIBUTION = [
    Distribution("random_invert()", 64, 64, None, applied=0.5),
    Distribution("random_invert(p=0.05)", 64, 64, None, applied=0.05),
]

REFUSED = [("random_invert(p=half)", "random_invert: p must be a number (the probability: 1 or more always applies, 0 or less never), got half")]
