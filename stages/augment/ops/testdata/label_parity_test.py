#!/usr/bin/python3
"""label_parity_test: label maps (semantic segmentation masks) moved by each geometric op,
against torchvision 0.14's functionals on PIL masks with the same parameters, as
torchvision's segmentation references move them (references/segmentation/transforms.py:
F.resize(target, size, interpolation=NEAREST), F.hflip, F.pad(target, fill=255),
F.crop; random_affine and random_rotation as F.affine / F.rotate with NEAREST and
fill=255). The masks must be identical, pixel for pixel.

Run by Bazel as `label_parity_test.py PATH_TO_op_tool`. Where an op uncovers pixels
(padding, a crop past the edge), flowloader writes ignore_index (the test's FILL); the
reference pads the PIL mask with the same value, as the references pad with 255.
"""
import os
import sys
import tempfile
import unittest

import numpy as np
from PIL import Image
import torchvision.transforms.functional as F
from torchvision.transforms import InterpolationMode

# Bazel runs a copy of this file from stages/augment/; harness.py stays in ops/testdata/.
HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.isfile(os.path.join(HERE, "harness.py")):
    HERE = os.path.join(HERE, "ops", "testdata")
sys.path.insert(0, HERE)
from harness import OpTool  # noqa: E402

FILL = 255


def masks(rng):
    """Label maps of odd sizes: random blocks of classes 0..20 (and some 255)."""
    out = []
    for w, h in [(97, 61), (64, 64), (33, 150), (300, 211)]:
        small = rng.integers(0, 21, size=(h // 7 + 1, w // 7 + 1), dtype=np.uint8)
        small[rng.random(small.shape) < 0.05] = 255
        big = np.kron(small, np.ones((7, 7), np.uint8))[:h, :w]
        # Single-pixel detail, so an off-by-one in a sampling position shows.
        big = big ^ (rng.random((h, w)) < 0.1).astype(np.uint8)
        out.append(Image.fromarray(big, mode="L"))
    return out


class LabelParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tool = OpTool(sys.argv[1] if len(sys.argv) > 1 else os.environ["OP_TOOL"])
        cls.dir = tempfile.mkdtemp()
        cls.rng = np.random.default_rng(3)
        cls.masks = masks(cls.rng)

    @classmethod
    def tearDownClass(cls):
        cls.tool.close()

    def move(self, op_text, params, mask):
        src = os.path.join(self.dir, "in.pgm")
        dst = os.path.join(self.dir, "out.pgm")
        mask.save(src)
        reply = self.tool.run("labels", op_text, ",".join(str(p) for p in params), src, dst,
                              FILL)
        self.assertEqual(reply, "ok", op_text)
        return np.asarray(Image.open(dst))

    def same(self, got, want, what):
        want = np.asarray(want)
        self.assertEqual(got.shape, want.shape, what)
        diff = np.argwhere(got != want)
        self.assertEqual(len(diff), 0, f"{what}: {len(diff)} pixels differ, first at "
                         f"{diff[:3].tolist()}")

    def test_random_resized_crop(self):
        for mask in self.masks:
            w, h = mask.size
            for _ in range(12):
                cw = int(self.rng.integers(1, w + 1))
                ch = int(self.rng.integers(1, h + 1))
                top = int(self.rng.integers(0, h - ch + 1))
                left = int(self.rng.integers(0, w - cw + 1))
                for size in ([64, 64], [37, 90], [ch, cw]):
                    got = self.move(f"random_resized_crop(size=[{size[0]}, {size[1]}])",
                                    [top, left, ch, cw], mask)
                    want = F.resized_crop(mask, top, left, ch, cw, size,
                                          InterpolationMode.NEAREST)
                    self.same(got, want, f"resized_crop {mask.size} {top},{left},{ch},{cw} "
                              f"-> {size}")

    def test_flips(self):
        for mask in self.masks:
            self.same(self.move("random_horizontal_flip()", [], mask), F.hflip(mask), "hflip")
            self.same(self.move("random_vertical_flip()", [], mask), F.vflip(mask), "vflip")

    def test_resize(self):
        for mask in self.masks:
            for size in (50, 128, [40, 70]):
                arg = size if isinstance(size, int) else f"[{size[0]}, {size[1]}]"
                got = self.move(f"resize(size={arg})", [], mask)
                want = F.resize(mask, size, InterpolationMode.NEAREST)
                self.same(got, want, f"resize {mask.size} -> {size}")

    def test_center_crop(self):
        for mask in self.masks:
            for size in (32, 80, 301):
                got = self.move(f"center_crop(size={size})", [], mask)
                # F.center_crop pads with 0; the references' label padding is the fill.
                w, h = mask.size
                pl, pt = max(0, (size - w) // 2), max(0, (size - h) // 2)
                pr, pb = max(0, (size - w + 1) // 2), max(0, (size - h + 1) // 2)
                padded = F.pad(mask, [pl, pt, pr, pb], fill=FILL) if pl or pt or pr or pb \
                    else mask
                want = F.center_crop(padded, size)
                self.same(got, want, f"center_crop {mask.size} -> {size}")

    def test_random_crop_with_padding(self):
        for mask in self.masks:
            w, h = mask.size
            for padding, size in (([4, 4, 4, 4], 40), ([0, 9, 3, 0], 30), ([16, 16, 16, 16], 60)):
                pw, ph = w + padding[0] + padding[2], h + padding[1] + padding[3]
                if pw < size or ph < size:
                    continue
                top = int(self.rng.integers(0, ph - size + 1))
                left = int(self.rng.integers(0, pw - size + 1))
                text = (f"random_crop(size={size}, padding=[{padding[0]}, {padding[1]}, "
                        f"{padding[2]}, {padding[3]}])")
                got = self.move(text, [top, left, size, size], mask)
                want = F.crop(F.pad(mask, padding, fill=FILL), top, left, size, size)
                self.same(got, want, f"{text} at {top},{left}")

    def test_random_crop_pad_if_needed(self):
        mask = self.masks[0]  # 97 × 61: narrower than the crop's height.
        w, h = mask.size
        size = 80
        got = self.move(f"random_crop(size={size}, pad_if_needed=true)", [0, 5, size, size],
                        mask)
        padded = F.pad(mask, [0, size - h], fill=FILL)
        want = F.crop(padded, 0, 5, size, size)
        self.same(got, want, "pad_if_needed")

    def test_pad(self):
        for mask in self.masks:
            for mode in ("constant", "edge", "reflect", "symmetric"):
                got = self.move(f"pad(padding=[3, 5, 7, 2], padding_mode={mode})", [], mask)
                want = F.pad(mask, [3, 5, 7, 2], fill=FILL, padding_mode=mode)
                self.same(got, want, f"pad {mode}")


    def test_random_affine(self):
        # Parameters as RandomAffine.get_params draws them: angle, tx, ty, scale, shears.
        for mask in self.masks:
            for p in ([17.5, 0, 0, 1, 0, 0], [-23.0, 9, -5, 1.2, 7.5, 0],
                      [0, 3, 2, 0.8, -4.0, 6.5], [0, 0, 0, 1.7, 0, 0], [90, 0, 0, 1, 0, 0]):
                text = "random_affine(degrees=90, translate=[0.2, 0.2], scale=[0.5, 2], " \
                       "shear=[-10, 10, -10, 10])"
                got = self.move(text, p, mask)
                want = F.affine(mask, p[0], [p[1], p[2]], p[3], [p[4], p[5]],
                                InterpolationMode.NEAREST, fill=FILL)
                self.same(got, want, f"affine {mask.size} {p}")

    def test_random_rotation(self):
        for mask in self.masks:
            for expand in (False, True):
                for angle in (33.3, -41.0, 90.0, 180.0, 270.0, -127.0):
                    got = self.move(f"random_rotation(degrees=180, expand={str(expand).lower()})",
                                    [angle], mask)
                    want = F.rotate(mask, angle, InterpolationMode.NEAREST, expand=expand,
                                    fill=FILL)
                    self.same(got, want, f"rotate {mask.size} {angle} expand={expand}")

    def test_warps_about_a_centre(self):
        # center=[x, y]: the map turns about it as the image does (issue 35, round 8).
        for mask in self.masks:
            w, h = mask.size
            for c in ([0, 0], [w / 3, h + 4.5], [-9, 7]):
                text = f"random_affine(degrees=90, center=[{c[0]}, {c[1]}])"
                got = self.move(text, [-23.0, 9, -5, 1.2, 7.5, 0], mask)
                want = F.affine(mask, -23.0, [9, -5], 1.2, [7.5, 0.0],
                                InterpolationMode.NEAREST, fill=FILL, center=c)
                self.same(got, want, f"affine {mask.size} about {c}")
                for expand in (False, True):
                    text = (f"random_rotation(degrees=180, expand={str(expand).lower()}, "
                            f"center=[{c[0]}, {c[1]}])")
                    got = self.move(text, [33.3], mask)
                    want = F.rotate(mask, 33.3, InterpolationMode.NEAREST, expand=expand,
                                    fill=FILL, center=c)
                    self.same(got, want, f"rotate {mask.size} about {c} expand={expand}")

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
