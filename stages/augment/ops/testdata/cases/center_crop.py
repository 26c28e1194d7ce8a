"""center_crop: F.center_crop on PIL images, zero-padded where the crop is larger."""
import torchvision.transforms.functional as F
from harness import Parity

PARITY = [
    Parity("center_crop(size=32)", [], lambda pil, p: F.center_crop(pil, 32), max_diff=0),
    Parity("center_crop(size=[21, 50])", [], lambda pil, p: F.center_crop(pil, [21, 50]),
           max_diff=0),
    Parity("center_crop(size=[81, 99])", [], lambda pil, p: F.center_crop(pil, [81, 99]),
           max_diff=0),
]

DISTRIBUTION = []

REFUSED = [("center_crop(size=-3)", "size must be")]
