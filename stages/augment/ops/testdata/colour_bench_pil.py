#!/usr/bin/python3
"""colour_bench_pil: colour_bench's calls through torchvision 0.14 on a PIL image (what
a torch DataLoader worker runs), microseconds of thread CPU time per 224 x 224 image, one thread."""
import sys
import time

import numpy as np
import torch
import torchvision.transforms as T
import torchvision.transforms.functional as F
from PIL import Image

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
y, x = np.mgrid[0:224, 0:224].astype(np.float64)
rng = np.random.default_rng(7)
arr = np.stack([127 + 120 * np.sin(x / 9.0 + y / 23.0), 127 + 120 * np.cos(y / 7.0),
                (x * 255.0 / 224 + y * 60.0 / 224) % 256], axis=-1) + rng.integers(-16, 16, (224, 224, 1))
pil = Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")
torch.set_num_threads(1)
cj = T.ColorJitter(0.4, 0.4, 0.2, 0.1)
for name, fn in [
        ("adjust_brightness(1.3)", lambda i: F.adjust_brightness(i, 1.3)),
        ("adjust_contrast(0.7)", lambda i: F.adjust_contrast(i, 0.7)),
        ("adjust_saturation(1.15)", lambda i: F.adjust_saturation(i, 1.15)),
        ("adjust_hue(0.08)", lambda i: F.adjust_hue(i, 0.08)),
        ("adjust_sharpness(2)", lambda i: F.adjust_sharpness(i, 2.0)),
        ("grayscale", lambda i: F.rgb_to_grayscale(i, 3)),
        ("posterize(4)", lambda i: F.posterize(i, 4)),
        ("solarize(128)", lambda i: F.solarize(i, 128)),
        ("autocontrast", F.autocontrast),
        ("equalize", F.equalize),
        ("invert", F.invert),
        ("color_jitter(0.4, 0.4, 0.2, 0.1)", cj)]:
    fn(pil)
    t0 = time.thread_time()
    for _ in range(rounds):
        fn(pil)
    print(f"{name:32s} {(time.thread_time() - t0) / rounds * 1e6:8.1f} us")
