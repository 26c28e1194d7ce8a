"""random_solarize: F.solarize (ImageOps.solarize) on PIL images, exact."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [
    Parity(f"random_solarize(threshold={t})", [], lambda pil, p, t=t: F.solarize(pil, t),
           max_diff=0)
    for t in (0, 1, 127.5, 128, 200, 255)
]

DISTRIBUTION = [
    Distribution("random_solarize(threshold=128)", 64, 64, None, applied=0.5),
    Distribution("random_solarize(threshold=128, p=0.2)", 64, 64, None, applied=0.2),
]

REFUSED = [
    ("random_solarize(threshold=abc)", "random_solarize: threshold must be a number in"),
    ("random_solarize(threshold=[1, 2])", "random_solarize: threshold must be"),
]
