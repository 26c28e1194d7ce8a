"""random_horizontal_flip: F.hflip, applied with probability p."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [Parity("random_horizontal_flip()", [], lambda pil, p: F.hflip(pil), max_diff=0)]

DISTRIBUTION = [
    Distribution("random_horizontal_flip()", 64, 64, None, applied=0.5),
    Distribution("random_horizontal_flip(p=0.2)", 64, 64, None, applied=0.2),
]

REFUSED = [("random_horizontal_flip(p=x)", "p must be")]
