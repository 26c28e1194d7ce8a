"""grayscale: F.rgb_to_grayscale(img, 3) on PIL images (L = R*299/1000 + ... as PIL's
fixed-point rgb2l), exact. Only three output channels: a view stays RGB."""
import torchvision.transforms.functional as F
from harness import Parity

PARITY = [
    Parity("grayscale()", [], lambda pil, p: F.rgb_to_grayscale(pil, 3), max_diff=0),
    Parity("grayscale(num_output_channels=3)", [], lambda pil, p: F.rgb_to_grayscale(pil, 3),
           max_diff=0),
]

DISTRIBUTION = []

REFUSED = [
    ("grayscale(num_output_channels=1)",
     "grayscale: num_output_channels must be 3 (a view's pixels stay RGB: one-channel output "
     "is not supported), got 1"),
    ("grayscale(num_output_channels=2)", "grayscale: num_output_channels must be 3"),
]
