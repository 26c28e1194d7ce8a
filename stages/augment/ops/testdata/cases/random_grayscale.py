"""random_grayscale: RandomGrayscale on an RGB image is F.rgb_to_grayscale(img, 3), with
probability p (default 0.1)."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [Parity("random_grayscale()", [], lambda pil, p: F.rgb_to_grayscale(pil, 3),
                 max_diff=0)]

DISTRIBUTION = [
    Distribution("random_grayscale()", 64, 64, None, applied=0.1),
    Distribution("random_grayscale(p=0.2)", 64, 64, None, applied=0.2),
]

REFUSED = [("random_grayscale(p=[1, 2])", "random_grayscale: p must be a number (the probability: 1 or more always applies, 0 or less never), got [1, 2]"),
           ("random_grayscale(num_output_channels=3)", "random_grayscale has no argument")]
