"""Hostile but valid calls of flowloader.transforms on float tensors (docs/python.md,
"Float tensors"), each against torchvision 0.14's tensor path: what torchvision computes
is computed, what it cannot is refused in one line naming the op and the knob, never an
internal function's name or a refusal of what torchvision accepts.
"""

import pytest
import torch
import torchvision.transforms as TV
import torchvision.transforms.functional as TF

import flowloader.transforms as T
import flowloader.transforms.functional as F


def test_a_resize_whose_long_side_passes_the_limit_names_resize_and_size():
    # Resize(200) of a 1 x 300 image makes its long side 60000: the size itself is valid,
    # the output is not; the refusal named the extension's _float_resize.
    x = torch.rand(3, 1, 300)
    for call in (lambda: T.Resize(200)(x), lambda: F.resize(x, 200),
                 lambda: T.Resize(200, antialias=True)(x[None])):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and len(message) <= 240, message
        assert "_float" not in message, message
        assert "resize" in message and "60000x200" in message and "16384" in message, message
        assert "size" in message.split(":")[-1], message  # The knob to change.
    # Within the limit it is torchvision's size.
    assert T.Resize(2)(x).shape == TF.resize(x, 2).shape == (3, 2, 600)


def test_a_perspective_with_two_end_points_drawn_equal_is_not_a_value_error():
    # RandomPerspective(distortion_scale=1.0) on a 9 x 9 image draws top-left and
    # top-right both at (4, 3) now and then: torchvision's float32 least squares returns
    # one of the solutions, and flowloader raised ValueError in the middle of training.
    x = torch.rand(3, 9, 9)
    start = [[0, 0], [8, 0], [8, 8], [0, 8]]
    end = [[4, 3], [4, 3], [8, 6], [3, 6]]
    theirs = TF.perspective(x, start, end)
    ours = F.perspective(x, start, end)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    assert torch.isfinite(ours).all()
    # The class over many draws on small images: never a refusal where torchvision's
    # own draw (the same seed) gives an image (it fails on some collinear draws).
    for side in (3, 5, 9):
        x = torch.rand(3, side, side)
        for seed in range(150):
            torch.manual_seed(seed)
            try:
                TV.RandomPerspective(distortion_scale=1.0, p=1.0)(x)
            except Exception:  # torch's _LinAlgError: torchvision refuses that draw too.
                continue
            torch.manual_seed(seed)
            assert T.RandomPerspective(distortion_scale=1.0, p=1.0)(x).shape == x.shape


def test_a_perspective_of_a_one_pixel_side_is_still_refused_as_torchvision_refuses():
    x = torch.rand(3, 1, 17)
    start = [[0, 0], [16, 0], [16, 0], [0, 0]]
    end = [[4, 0], [12, 0], [16, 0], [3, 0]]
    with pytest.raises(Exception):
        TF.perspective(x, start, end)
    with pytest.raises(ValueError) as info:
        F.perspective(x, start, end)
    assert "\n" not in str(info.value) and "no solution" in str(info.value)


def test_a_crop_box_far_outside_the_image_names_crop_not_random_crop():
    # F.crop(t, 2**40, 2**40, 3, 3) was refused as "random_crop: padding must be ... got
    # [0, 0, 1099511627775, 1099511627775]": an op and an argument the user never wrote.
    for img in (torch.rand(1, 4, 4), torch.zeros(3, 4, 4, dtype=torch.uint8)):
        with pytest.raises(ValueError) as info:
            F.crop(img, 2**40, 2**40, 3, 3)
        message = str(info.value)
        assert "\n" not in message and len(message) <= 240, message
        assert "crop(top=1099511627776" in message and "random_crop" not in message, message
    # A box partly outside within the limit is still the zero-padded box.
    assert F.crop(torch.rand(1, 4, 4), -2, -2, 3, 3).shape == (1, 3, 3)


@pytest.mark.parametrize("name", ["adjust_brightness", "adjust_contrast", "adjust_saturation"])
def test_a_nan_colour_factor_is_refused_not_ignored(name):
    # NaN is color_jitter's "not drawn": F.adjust_contrast(t, nan) gave the image back
    # unchanged, where torchvision gives NaN pixels (tensor) or some (PIL).
    for img in (torch.rand(3, 4, 4), torch.zeros(3, 4, 4, dtype=torch.uint8)):
        with pytest.raises(ValueError) as info:
            getattr(F, name)(img, float("nan"))
        assert "NaN" in str(info.value) and "\n" not in str(info.value)
        assert getattr(F, name)(img, 1.0).shape == img.shape


EXPANDED = """
    import sys, time
    import torch
    import flowloader.transforms as T
    import flowloader.transforms.functional as F

    def peak_mib():
        # This process's own peak RSS (VmHWM). Not ru_maxrss: across fork + exec it keeps
        # the parent's peak.
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) / 1024

    base = {"uint8": torch.zeros(3, 1, 1, dtype=torch.uint8), "float32": torch.zeros(3, 1, 1)}
    calls = {"flip": T.RandomHorizontalFlip(1), "invert": F.invert, "hflip": F.hflip,
             "normalize": T.Normalize([0.5] * 3, [0.5] * 3), "blur": T.GaussianBlur(3)}
    T.RandomHorizontalFlip(1)(torch.zeros(3, 4, 4))  # Imports done before the baseline.
    T.RandomHorizontalFlip(1)(torch.zeros(3, 4, 4, dtype=torch.uint8))
    before = peak_mib()
    # Views of three values: 100000² (28 GiB as uint8, if copied), 20000² (1.1 GiB).
    for dtype, one in base.items():
        for shape in ((3, 100000, 100000), (3, 20000, 20000), (2, 3, 16385, 100)):
            x = one.expand(*shape) if len(shape) == 3 else one[None].expand(*shape)
            for name, call in calls.items():
                if name == "normalize" and dtype == "uint8":
                    continue
                start = time.monotonic()
                try:
                    call(x)
                    print(f"RESULT {dtype} {shape} {name}: no error")
                except Exception as e:
                    print(f"RESULT {dtype} {shape} {name}: {type(e).__name__}: {e}"
                          f" | {time.monotonic() - start:.2f}s")
    print(f"GROWTH {peak_mib() - before:.1f}")
"""


def test_an_expanded_image_over_the_side_limit_is_refused_before_any_copy():
    # torch.zeros(3, 1, 1).expand(3, 100000, 100000) is a view of three values; the eager
    # paths copied it (28 GiB as uint8) before eager.cc's side check: a MemoryError, or
    # (at 20000²) a 1.1 GiB copy before the refusal.
    import os
    import subprocess
    import sys
    import textwrap
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(EXPANDED)],
                         capture_output=True, text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [l for l in out.stdout.splitlines() if l.startswith("RESULT ")]
    assert len(lines) == 27, out.stdout
    for line in lines:
        message, seconds = line.split(": ", 1)[1].rsplit(" | ", 1)
        assert message.startswith("ValueError: flowloader.transforms: "), line
        assert "16384" in message and "shape (" in message and len(message) <= 240, line
        assert float(seconds[:-1]) < 1, line
    growth = [l for l in out.stdout.splitlines() if l.startswith("GROWTH ")]
    assert growth and float(growth[0].split()[1]) < 64, out.stdout  # No copy of any.
