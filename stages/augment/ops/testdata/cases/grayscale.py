"""grayscale: F.rgb_to_grayscale(img, n) on PIL images (L = R*299/1000 + ... as PIL's
fixed-point rgb2l), exact. The op writes three equal channels either way; with
num_output_channels=1 the view keeps the first (ViewProgram::PlanChannels), so its
pixels here are the L image's in each channel."""
import torchvision.transforms.functional as F
from harness import Parity

PARITY = [
    Parity("grayscale()", [], lambda pil, p: F.rgb_to_grayscale(pil, 3), max_diff=0),
    Parity("grayscale(num_output_channels=3)", [], lambda pil, p: F.rgb_to_grayscale(pil, 3),
           max_diff=0),
    Parity("grayscale(num_output_channels=1)", [],
           lambda pil, p: F.rgb_to_grayscale(pil, 1).convert("RGB"), max_diff=0),
]

DISTRIBUTION = []

REFUSED = [
    ("grayscale(num_output_channels=2)", "grayscale: num_output_channels must be 1 or 3"),
]
