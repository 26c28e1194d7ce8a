"""adjust_gamma: F.adjust_gamma (PIL's table) on PIL images, exact."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [
    Parity(f"adjust_gamma(gamma={g}, gain={k})", [],
           lambda pil, p, g=g, k=k: F.adjust_gamma(pil, g, k), max_diff=0)
    for g, k in ((0.0, 1), (0.45, 1), (1, 1), (2.2, 1), (3.7, 0.6), (0.8, 1.4), (1, -0.5))
]

DISTRIBUTION = [
    Distribution("adjust_gamma(gamma=0.5)", 64, 64, None, applied=1.0),
    Distribution("adjust_gamma(gamma=2, p=0.3)", 64, 64, None, applied=0.3),
]

REFUSED = [
    ("adjust_gamma(gamma=-1)", "adjust_gamma: gamma must be a finite number >= 0, got -1"),
    ("adjust_gamma(gain=inf)", "adjust_gamma: gain must be a finite number, got inf"),
]
