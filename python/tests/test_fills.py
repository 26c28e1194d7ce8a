"""Fills as torchvision 0.14 takes them, by image kind (issue 35, round 8).

torchvision parses a fill differently on each kind of image: a PIL image gets int() of
each value (NaN and values past a C int raise), clamped by PIL; a uint8 tensor's rotate,
affine, perspective and the policies' geometric sub-ops blend the float fill and cast
to uint8 as torch does (300 is 44, -1 is 255, 2.7 is 3); a tensor's pad takes one Python
number (a uint8 tensor's in [0, 255] only); the classes' forward makes a tensor's fill
floats (`[float(f) for f in fill]`, so a numpy int scalar is a TypeError). Each case here
runs flowloader's and torchvision's transform on the same image from the same seed and
compares: the exception class (flowloader's message one line), else the pixels (exact,
or within 1e-5 on float tensors) and torch's generator state after.
"""

import warnings

import numpy as np
import pytest
import torch
import torchvision.transforms as TV
import torchvision.transforms.functional as TF
from PIL import Image

import flowloader.transforms as FT
import flowloader.transforms.functional as FF

_POINTS = ([[0, 0], [10, 0], [10, 8], [0, 8]], [[2, 1], [9, 0], [10, 8], [1, 6]])


def _images():
    rng = np.random.default_rng(35)
    u8 = torch.from_numpy(rng.integers(0, 256, (3, 9, 11), dtype=np.uint8))
    return {"pil": Image.fromarray(u8.permute(1, 2, 0).numpy()), "uint8": u8,
            "float": u8.float() / 255, "batch": torch.stack([u8, u8.flip(-1)])}


def _outcome(fn, module, img):
    torch.manual_seed(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's "fill should be int, float, ..."
        try:
            out = fn(module, img.clone() if isinstance(img, torch.Tensor) else img.copy())
        except Exception as e:  # noqa: BLE001 -- the class is what is compared.
            return e, torch.rand(3)
    return np.asarray(out).astype(np.float64), torch.rand(3)


def _same(fn, img, functional=False, levels_fn=None):
    """fn(module, img) from both modules: the same exception class, or the same pixels
    and generator state after. levels_fn: on a uint8 tensor, whose geometry flowloader
    takes from PIL (docs/python.md), the same call with the fill's levels (torch's cast
    of it): each module must give what it gives for those levels."""
    theirs, after_theirs = _outcome(fn, TF if functional else TV, img)
    ours, after_ours = _outcome(fn, FF if functional else FT, img)
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), (theirs, ours)
        assert "\n" not in str(ours)
        return theirs
    assert not isinstance(ours, Exception), (ours, theirs)
    if levels_fn is not None:
        for module, out in ((TF if functional else TV, theirs), (FF if functional else FT,
                                                                  ours)):
            assert np.array_equal(_outcome(levels_fn, module, img)[0], out)
        assert torch.equal(after_ours, after_theirs)
        return theirs
    assert ours.shape == theirs.shape
    same_nan = np.isnan(ours) & np.isnan(theirs)
    diff = np.where(same_nan, 0, np.abs(ours - theirs))
    floats = isinstance(img, torch.Tensor) and img.dtype.is_floating_point
    assert diff.max() <= (1e-5 if floats else 0)
    assert torch.equal(after_ours, after_theirs)
    return theirs


def _levels(fill):
    """torch's uint8 cast of a float fill (its list: a list stays one, a number one)."""
    return torch.tensor(fill, dtype=torch.float32).round().to(torch.uint8).tolist()


_WARPS = {
    "F.rotate": (lambda M, x, f: M.rotate(x, 30, fill=f), True),
    "F.affine": (lambda M, x, f: M.affine(x, 20, [1, -1], 1.1, [5, 0], fill=f), True),
    "F.perspective": (lambda M, x, f: M.perspective(
        x, *_POINTS, interpolation=M.InterpolationMode.NEAREST, fill=f), True),
    "RandomRotation": (lambda M, x, f: M.RandomRotation(40, fill=f)(x), False),
    "RandomAffine": (lambda M, x, f: M.RandomAffine(30, (0.2, 0.2), fill=f)(x), False),
    "RandomPerspective": (lambda M, x, f: M.RandomPerspective(
        0.6, 1, M.InterpolationMode.NEAREST, fill=f)(x), False),
}
_FILLS = [300, -1, 2.7, 255.5, 1e10, -2.5e9, float("nan"), [300, 2.5, -3], [7],
          np.int64(300), np.float32(3.5), np.float64(2.7)]


@pytest.mark.parametrize("fill", _FILLS, ids=repr)
@pytest.mark.parametrize("name", sorted(_WARPS))
@pytest.mark.parametrize("kind", ["uint8", "batch", "float", "pil"])
def test_warp_fill_as_torchvision_takes_it(kind, name, fill):
    call, functional = _WARPS[name]
    img = _images()[kind]
    levels_fn = None
    if kind in ("uint8", "batch"):  # (Where torchvision raises, the classes compare.)
        levels = _levels(fill)
        levels_fn = lambda M, x: call(M, x, levels)  # noqa: E731
    out = _same(lambda M, x: call(M, x, fill), img, functional, levels_fn)
    if kind in ("uint8", "batch") and fill == 300 and not isinstance(out, Exception):
        assert (out == 44).any()  # torch's cast of the fill shows (PIL clamped it to 255).


_POLICIES = {
    "TrivialAugmentWide": lambda M, f: M.TrivialAugmentWide(fill=f),
    "RandAugment": lambda M, f: M.RandAugment(3, 12, fill=f),
    "AutoAugment": lambda M, f: M.AutoAugment(M.AutoAugmentPolicy.SVHN, fill=f),
}


_POLICY_FILLS = [300, -1, 2.7, 1e10, [300, 2.5, -3], [7], np.int64(300)]


# (A fill of two values on a uint8 tensor only: elsewhere the op text takes one or three,
# refused when made where torchvision raises where a warp is drawn: docs/python.md.)
@pytest.mark.parametrize("kind,fill", [(k, f) for k in ("uint8", "pil", "float")
                                       for f in _POLICY_FILLS] + [("uint8", [1, 2])],
                         ids=repr)
@pytest.mark.parametrize("name", sorted(_POLICIES))
def test_policy_fill_as_torchvision_takes_it(kind, name, fill):
    # Several draws from one seed: a geometric sub-op among them parses the fill.
    def run(M, x, value=fill):
        t = _POLICIES[name](M, value)
        return np.stack([np.asarray(t(x)) for _ in range(12)])
    levels_fn = None
    if kind == "uint8":
        levels = _levels(fill)
        levels_fn = lambda M, x: run(M, x, levels)  # noqa: E731
    _same(run, _images()[kind], levels_fn=levels_fn)


@pytest.mark.parametrize("fill", [300, -1, 255.5, 2.7, 0, 255, float("nan"), 1e10, [7],
                                  np.int64(3), np.float32(3), np.float64(3.5)], ids=repr)
@pytest.mark.parametrize("kind", ["uint8", "float", "pil"])
def test_pad_fill_as_torchvision_takes_it(kind, fill):
    img = _images()[kind]
    _same(lambda M, x: M.pad(x, [2, 1], fill=fill), img, functional=True)
    _same(lambda M, x: M.Pad([2, 1], fill=fill)(x), img)
    _same(lambda M, x: M.RandomCrop(10, padding=1, fill=fill)(x), img)
    _same(lambda M, x: M.RandomCrop((12, 13), pad_if_needed=True, fill=fill)(x), img)


def test_augmix_fill_is_torchs_cast_on_pil_images_too():
    """AugMix runs a PIL image as a uint8 tensor: its fill of 300 is 44 there, as on a
    tensor (PIL would clamp it to 255)."""
    ours = FT.AugMix(fill=300).__dict__
    assert FT.Compose([FT.AugMix(fill=300)]).op_items()[0][1]["fill"] == [44, 44, 44]
    assert FT.Compose([FT.AugMix(fill=[300, -1, 2.7])]).op_items()[0][1]["fill"] == [
        44, 255, 3]
    assert ours["_args"]["fill"] == 300  # Given as it was (its repr).
