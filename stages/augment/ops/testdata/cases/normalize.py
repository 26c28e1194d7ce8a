"""normalize: F.normalize(F.to_tensor(img), mean, std)."""
import torchvision.transforms.functional as F
from harness import Parity

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]

PARITY = [
    Parity("normalize()", [], lambda pil, p: F.normalize(F.to_tensor(pil), MEAN, STD),
           max_diff=1e-5),
    Parity("normalize(mean=[0.5, 0.5, 0.5], std=0.5)", [],
           lambda pil, p: F.normalize(F.to_tensor(pil), [0.5] * 3, [0.5] * 3), max_diff=1e-5),
]

DISTRIBUTION = []

REFUSED = [
    ("normalize(std=[0.2, 0, 0.2])", "std must be"),
    ("normalize(mean=[1, 2])", "mean must be"),
]
