"""compose: torchvision's RandomApply over several transforms: the sub-ops in order, all
under one p draw. Params: the sub-ops' seed (each sub-op then draws its own p and
parameters from it); deterministic sub-ops here, so the reference is the functionals in
order."""
import torchvision.transforms.functional as F
from harness import Distribution, Parity

PARITY = [
    Parity("compose(transforms=[random_invert(p=1); center_crop(size=16)])", [3],
           lambda pil, p: F.center_crop(F.invert(pil), 16), max_diff=0),
    Parity("compose(transforms=[random_horizontal_flip(p=1); random_vertical_flip(p=0)])",
           [12345], lambda pil, p: F.hflip(pil), max_diff=0),
]

DISTRIBUTION = [
    Distribution("compose(transforms=[grayscale(); random_invert()], p=0.3)", 64, 64, None,
                 applied=0.3),
]

REFUSED = [
    ("compose(transforms=[random_iou_crop()])", "compose: transforms: op 1 (random_iou_crop)"),
    ("compose(transforms=[python_lambda(id=1)])", "a Python Lambda cannot run inside"),
    ("compose(transforms=[grayscale(); random_invrt()])",
     "compose: transforms: op 2: unknown op 'random_invrt'"),
    ("compose(transforms=3)", "compose: transforms must be an op list"),
    ("compose(transforms=[grayscale(); grayscale(); grayscale(); grayscale(); grayscale(); "
     "grayscale(); grayscale(); grayscale(); grayscale()])", "at most 8 ops, got 9"),
]
