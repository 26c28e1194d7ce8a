"""resize: F.resize on PIL images (shorter side, [h, w], max_size)."""
import torchvision.transforms as T
import torchvision.transforms.functional as F
from harness import Parity

MODES = {"bilinear": T.InterpolationMode.BILINEAR, "bicubic": T.InterpolationMode.BICUBIC,
         "nearest": T.InterpolationMode.NEAREST, "box": T.InterpolationMode.BOX,
         "hamming": T.InterpolationMode.HAMMING, "lanczos": T.InterpolationMode.LANCZOS}

PARITY = [
    Parity(f"resize(size=[37, 50], interpolation={m})", [],
           lambda pil, p, m=m: F.resize(pil, [37, 50], MODES[m]), max_diff=0)
    for m in MODES
] + [
    Parity("resize(size=120)", [], lambda pil, p: F.resize(pil, 120), max_diff=0),
    Parity("resize(size=[300, 7], interpolation=lanczos)", [],
           lambda pil, p: F.resize(pil, [300, 7], MODES["lanczos"]), max_diff=0),
    Parity("resize(size=30, max_size=40, interpolation=bicubic)", [],
           lambda pil, p: F.resize(pil, 30, T.InterpolationMode.BICUBIC, max_size=40),
           max_diff=0),
]

DISTRIBUTION = []

REFUSED = [
    ("resize(size=[1, 2, 3])", "size must be"),
    ("resize(size=[10, 20], max_size=30)", "max_size must be null"),
    ("resize(size=50, max_size=40)", "max_size must be"),
    ("resize(interpolation=sinc)", "interpolation must be"),
]
