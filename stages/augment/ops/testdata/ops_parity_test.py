#!/usr/bin/python3
"""ops_parity_test: every op against torchvision 0.14 on PIL images.

Run by Bazel as `ops_parity_test.py PATH_TO_op_tool`. Each file in cases/ describes one
op (one op, one file) with two lists:

  PARITY: Parity(op_text, params, reference, max_diff=1, min_psnr=None)
      op_tool applies op_text with `params` (its get_params values, in order) to the test
      images; `reference(pil_image, params)` is torchvision's functional op with the same
      parameters, returning a PIL image or a float tensor [3, H, W]. The outputs must agree
      within max_diff levels (uint8) or max_diff (float), or, where the case says it cannot
      (PIL's HSV hue path), reach min_psnr dB.
  DISTRIBUTION: Distribution(op_text, width, height, reference, columns)
      op_tool draws N = 10 000 parameter sets; `reference(width, height, n)` draws n with
      torchvision's own get_params (torch's generator) as an array [n, k]; column
      1 + i of ours (column 0 is whether p applied) must follow the same distribution as
      column i of theirs (two-sample Kolmogorov-Smirnov at alpha 0.001, or the same
      frequencies within 5 standard errors for a discrete column). `applied` (optional)
      is the expected frequency of column 0; `joint` (optional) lists tuples of columns
      compared as one categorical value per draw.
  Parity's optional `images` adds edge-case images (flat channels, tiny sizes) to the
  shared test images for that case.

Fails, never skips, when python3-pil, torch or torchvision are missing.
"""

import glob
import importlib.util
import os
import random
import sys
import tempfile
import unittest

import numpy as np
from PIL import Image

# Bazel runs a copy of this file from stages/augment/; the cases stay in ops/testdata/.
HERE = os.path.dirname(os.path.abspath(__file__))
if not os.path.isdir(os.path.join(HERE, "cases")):
    HERE = os.path.join(HERE, "ops", "testdata")
sys.path.insert(0, HERE)
from harness import Distribution, OpTool, Parity  # noqa: E402

TOOL = None  # Set from argv in __main__.
N_DRAWS = 10000


def test_images():
    """Photos-like and adversarial RGB images of odd sizes (fixed seed)."""
    rng = np.random.default_rng(7)
    images = []
    for w, h in [(97, 75), (64, 64), (240, 180)]:
        y, x = np.mgrid[0:h, 0:w].astype(np.float64)
        smooth = np.stack([
            127 + 120 * np.sin(x / 9.0 + y / 23.0),
            127 + 120 * np.cos(y / 7.0),
            (x * 255.0 / w + y * 60.0 / h) % 256,
        ], axis=-1)
        noise = rng.normal(0, 25, size=(h, w, 3))
        images.append(np.clip(smooth + noise, 0, 255).astype(np.uint8))
    images.append(rng.integers(0, 256, size=(33, 47, 3), dtype=np.uint8))
    return [Image.fromarray(a, "RGB") for a in images]


def write_ppm(path, pil):
    pil.save(path, format="PPM")


def read_output(path):
    with open(path, "rb") as f:
        head = f.readline()
        if head.startswith(b"F32"):
            _, c, h, w = head.split()
            data = np.frombuffer(f.read(), dtype="<f4")
            return data.reshape(int(c), int(h), int(w))
    return np.asarray(Image.open(path).convert("RGB"))


def write_f32(path, tensor):
    arr = np.ascontiguousarray(tensor.numpy().astype("<f4"))
    with open(path, "wb") as f:
        f.write(f"F32 {arr.shape[0]} {arr.shape[1]} {arr.shape[2]}\n".encode())
        f.write(arr.tobytes())


def as_array(ref):
    if isinstance(ref, Image.Image):
        return np.asarray(ref.convert("RGB"))
    return ref.numpy() if hasattr(ref, "numpy") else np.asarray(ref)


def psnr(a, b, peak):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(peak * peak / mse)


def ks_statistic(a, b):
    a = np.sort(a)
    b = np.sort(b)
    values = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, values, side="right") / len(a)
    cdf_b = np.searchsorted(b, values, side="right") / len(b)
    return np.max(np.abs(cdf_a - cdf_b))


def same_distribution(ours, theirs):
    """Returns None when `ours` and `theirs` look drawn from one distribution, else why."""
    ours = np.asarray(ours, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    values = np.unique(np.concatenate([ours, theirs]))
    if len(values) <= 32:  # Discrete: compare frequencies.
        for v in values:
            p1 = np.mean(ours == v)
            p2 = np.mean(theirs == v)
            pooled = (p1 * len(ours) + p2 * len(theirs)) / (len(ours) + len(theirs))
            se = np.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / len(ours) + 1 / len(theirs)))
            if abs(p1 - p2) > 5 * se + 1e-9:
                return f"value {v}: frequency {p1:.4f} here, {p2:.4f} in torchvision"
        return None
    d = ks_statistic(ours, theirs)
    critical = 1.95 * np.sqrt((len(ours) + len(theirs)) / (len(ours) * len(theirs)))
    if d > critical:
        return (f"KS distance {d:.4f} > {critical:.4f} (means {ours.mean():.4f} vs "
                f"{theirs.mean():.4f})")
    return None


def load_cases():
    cases = {}
    for path in sorted(glob.glob(os.path.join(HERE, "cases", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(f"cases_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        cases[name] = module
    return cases


class OpsParityTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tool = OpTool(TOOL)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.images = test_images()
        cls.cases = load_cases()

    @classmethod
    def tearDownClass(cls):
        cls.tool.close()
        cls.tmp.cleanup()

    def test_every_registered_op_has_cases(self):
        # The op list comes from the binary: an op without a case file fails here.
        for name in self.tool.run("names").split("\n"):
            self.assertIn(name, self.cases, f"op {name} has no cases/{name}.py")
        for name, module in self.cases.items():
            self.assertTrue(getattr(module, "PARITY", None), f"{name}: no PARITY cases")
            self.assertTrue(getattr(module, "DISTRIBUTION", None) is not None,
                            f"{name}: no DISTRIBUTION list")

    def test_parity(self):
        for name, module in self.cases.items():
            for k, case in enumerate(module.PARITY):
                images = self.images + (case.images() if case.images else [])
                for i, pil in enumerate(images):
                    with self.subTest(op=case.op_text, params=case.params, image=i):
                        self.check_parity(case, pil, f"{name}_{k}_{i}")

    def check_parity(self, case, pil, tag):
        src = os.path.join(self.tmp.name, f"{tag}_in")
        out = os.path.join(self.tmp.name, f"{tag}_out")
        params = case.params(pil) if callable(case.params) else case.params
        if case.tensor_input:
            import torchvision.transforms.functional as F
            tensor = F.normalize(F.to_tensor(pil), [0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
            write_f32(src, tensor)
            ref = as_array(case.reference(tensor.clone(), params))
        else:
            write_ppm(src, pil)
            ref = as_array(case.reference(pil, params))
        reply = self.tool.run("apply", case.op_text, ",".join(repr(float(p)) for p in params),
                              src, out)
        self.assertEqual(reply, "ok", f"{case.op_text}: {reply}")
        ours = read_output(out)
        self.assertEqual(ours.shape, ref.shape, f"{case.op_text}: shape")
        if case.min_psnr is not None:
            peak = 255.0 if ours.dtype == np.uint8 else 1.0
            value = psnr(ours, ref, peak)
            self.assertGreaterEqual(value, case.min_psnr, f"{case.op_text}: PSNR {value:.1f} dB")
        else:
            diff = np.abs(ours.astype(np.float64) - ref.astype(np.float64)).max()
            self.assertLessEqual(diff, case.max_diff,
                                 f"{case.op_text} {params}: max difference {diff}")

    def test_distribution(self):
        for name, module in self.cases.items():
            for case in module.DISTRIBUTION:
                with self.subTest(op=case.op_text):
                    self.check_distribution(case)

    def check_distribution(self, case):
        reply = self.tool.run("draw", case.op_text, case.width, case.height, N_DRAWS, 11)
        self.assertFalse(reply.startswith("error"), reply)
        rows = [[float(v) for v in line.split(",")] for line in reply.split("\n")]
        width = max(len(r) for r in rows)
        ours = np.array([r + [np.nan] * (width - len(r)) for r in rows])
        if case.applied is not None:
            freq = np.mean(ours[:, 0])
            se = np.sqrt(case.applied * (1 - case.applied) / N_DRAWS) + 1e-9
            self.assertLessEqual(abs(freq - case.applied), 5 * se,
                                 f"{case.op_text}: applied {freq:.4f}, want {case.applied}")
        if case.reference is None:
            return
        import torch
        # Every reference draws from a seeded generator (torch's, Python's or numpy's
        # global one), so a distribution check passes or fails the same on every run.
        torch.manual_seed(5)
        random.seed(5)
        np.random.seed(5)
        theirs = np.asarray(case.reference(case.width, case.height, N_DRAWS), dtype=np.float64)
        columns = case.columns if case.columns is not None else range(theirs.shape[1])
        for col in columns:
            a = ours[:, 1 + col]
            b = theirs[:, col]
            why = same_distribution(a[~np.isnan(a)], b[~np.isnan(b)])
            self.assertIsNone(why, f"{case.op_text}: parameter {col}: {why}")
        for cols in case.joint or []:
            a = [tuple(r) for r in ours[:, [1 + c for c in cols]]]
            b = [tuple(r) for r in theirs[:, list(cols)]]
            codes = {t: k for k, t in enumerate(sorted(set(a) | set(b)))}
            why = same_distribution([codes[t] for t in a], [codes[t] for t in b])
            self.assertIsNone(why, f"{case.op_text}: parameters {cols} jointly: {why}")

    def test_refusals(self):
        for name, module in self.cases.items():
            for text, fragment in getattr(module, "REFUSED", []):
                with self.subTest(op=text):
                    reply = self.tool.run("check", text)
                    self.assertTrue(reply.startswith("error"), f"{text} accepted")
                    self.assertIn(fragment, reply)


if __name__ == "__main__":
    TOOL = os.path.abspath(sys.argv.pop(1))
    unittest.main()
