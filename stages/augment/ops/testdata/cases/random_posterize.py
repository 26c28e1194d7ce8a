"""random_posterize: F.posterize (ImageOps.posterize) on PIL images, exact."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [
    Parity(f"random_posterize(bits={b})", [], lambda pil, p, b=b: F.posterize(pil, b),
           max_diff=0)
    for b in range(0, 9)
]

DISTRIBUTION = [
    Distribution("random_posterize(bits=4)", 64, 64, None, applied=0.5),
    Distribution("random_posterize(bits=2, p=0.9)", 64, 64, None, applied=0.9),
]

REFUSED = [
    ("random_posterize(bits=9)", "random_posterize: bits must be an integer in [0, 8], got 9"),
    ("random_posterize(bits=-1)", "random_posterize: bits must be an integer in [0, 8], got -1"),
    ("random_posterize(bits=3.5)",
     "random_posterize: bits must be an integer in [0, 8], got 3.5"),
]
