"""center= of RandomRotation, RandomAffine, F.rotate and F.affine (issue 35): torchvision
0.14's pixels for centres inside the image, on its border, outside it and at fractions,
with and without expand, NEAREST and BILINEAR, with fills, on PIL images (exact, as the
PIL parity tests of test_eager.py), uint8 tensors (PIL's pixels, as every flowloader
uint8 warp) and float tensors (grid_sample's tolerances of test_eager_float.py); the same
argument checks (TypeError / ValueError) as torchvision's."""

import numpy as np
import pytest
import torch
import torchvision.transforms as TV
import torchvision.transforms.functional as TF
from PIL import Image

import flowloader.transforms as T
import flowloader.transforms.functional as F


def _images(n, seed):
    """n random PIL images (RGB and L), sides 1..31, the first ones 1x1 and odd."""
    rng = np.random.default_rng(seed)
    sizes = [(1, 1), (7, 3), (3, 9)]
    out = []
    for i in range(n):
        w, h = sizes[i] if i < len(sizes) else (int(v) for v in rng.integers(1, 32, 2))
        mode = "L" if i % 4 == 3 else "RGB"
        shape = (h, w) if mode == "L" else (h, w, 3)
        out.append(Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8), mode))
    return out


def _centers(w, h):
    """Inside, on the border (both corners), outside, and fractional centres."""
    return [[w // 3, h // 2], [0, 0], [w, h], [-5, h + 7], [w / 3.0, h / 4.2], (2.5, -1.25)]


MODES = [("NEAREST", T.InterpolationMode.NEAREST, TV.InterpolationMode.NEAREST),
         ("BILINEAR", T.InterpolationMode.BILINEAR, TV.InterpolationMode.BILINEAR)]


def _pixels(img):
    return np.asarray(img, dtype=np.int32)


@pytest.mark.parametrize("name,ours_mode,tv_mode", MODES, ids=[m[0] for m in MODES])
def test_functional_center_on_pil_is_torchvisions(name, ours_mode, tv_mode):
    for k, img in enumerate(_images(24, seed=35)):
        w, h = img.size
        fill = None if k % 3 == 0 else ([40, 200, 90] if img.mode == "RGB" else 77)
        for c in _centers(w, h):
            for angle in (33.0, -90.0, 180.0, 0.0):
                for expand in (False, True):
                    a = F.rotate(img, angle, ours_mode, expand, c, fill)
                    b = TF.rotate(img, angle, tv_mode, expand, c, fill)
                    assert a.size == b.size and a.mode == b.mode, (k, c, angle, expand)
                    assert np.array_equal(_pixels(a), _pixels(b)), (k, c, angle, expand)
            a = F.affine(img, 12.0, [2, -1], 1.2, [5.0, -3.0], ours_mode, fill, c)
            b = TF.affine(img, 12.0, [2, -1], 1.2, [5.0, -3.0], tv_mode, fill, c)
            assert np.array_equal(_pixels(a), _pixels(b)), (k, c)


def test_center_moves_the_pixels():
    # Not the image centre's result: the argument is not ignored.
    img = _images(5, seed=3)[4].convert("RGB").resize((20, 14))
    plain = _pixels(F.rotate(img, 30.0))
    assert not np.array_equal(plain, _pixels(F.rotate(img, 30.0, center=[0, 0])))
    assert np.array_equal(plain, _pixels(F.rotate(img, 30.0, center=[10, 7])))


CLASSES = [
    ("rotation", lambda M, I, c: M.RandomRotation(40, interpolation=I, center=c, fill=9)),
    ("rotation_expand", lambda M, I, c: M.RandomRotation((-90, 90), interpolation=I,
                                                         expand=True, center=c)),
    ("affine", lambda M, I, c: M.RandomAffine(25, (0.2, 0.1), (0.7, 1.3), (-10, 10, -5, 5),
                                              interpolation=I, fill=50, center=c)),
]


@pytest.mark.parametrize("name,make", CLASSES, ids=[c[0] for c in CLASSES])
def test_classes_center_on_pil_are_torchvisions_same_seed(name, make):
    for _, ours_mode, tv_mode in MODES:
        for k, img in enumerate(_images(30, seed=7)):
            for j, c in enumerate(_centers(*img.size)):
                ours, theirs = make(T, ours_mode, c), make(TV, tv_mode, c)
                torch.manual_seed(100 * k + j)
                a = ours(img)
                after = torch.rand(1)
                torch.manual_seed(100 * k + j)
                b = theirs(img)
                assert torch.equal(after, torch.rand(1))
                assert a.size == b.size, (k, c)
                assert np.array_equal(_pixels(a), _pixels(b)), (k, img.size, c)


def test_uint8_tensor_center_gets_pils_pixels():
    for k, img in enumerate(_images(12, seed=11)):
        img = img.convert("RGB")
        x = TF.pil_to_tensor(img)
        for c in _centers(*img.size):
            a = F.rotate(x, 25.0, T.InterpolationMode.BILINEAR, True, c, [1, 2, 3])
            b = TF.pil_to_tensor(TF.rotate(img, 25.0, TV.InterpolationMode.BILINEAR, True, c,
                                           [1, 2, 3]))
            assert torch.equal(a, b), (k, c)
            a = F.affine(x, -8.0, [1, 2], 0.9, [3.0, 1.0], center=c)
            b = TF.pil_to_tensor(TF.affine(img, -8.0, [1, 2], 0.9, [3.0, 1.0], center=c))
            assert torch.equal(a, b), (k, c)


def _floats(n, seed):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        c = 1 if i % 4 == 3 else 3
        h, w = (int(v) for v in torch.randint(1, 30, (2,), generator=g))
        dtype = torch.float64 if i % 5 == 4 else torch.float32
        out.append(torch.rand(c, h, w, generator=g).to(dtype))
    return out


@pytest.mark.parametrize("name,ours_mode,tv_mode", MODES, ids=[m[0] for m in MODES])
def test_float_tensor_center_is_torchvisions_grid_sample(name, ours_mode, tv_mode):
    """Bilinear within 1e-5 (1e-9 in float64); nearest the same pixels but where a sample
    lies within rounding of a pixel edge (at most 6 values or 0.2% of them)."""
    calls = [
        lambda M, I, x, c: M.rotate(x, 33.0, I, False, c, None),
        lambda M, I, x, c: M.rotate(x, -70.0, I, True, c, [0.25]),
        lambda M, I, x, c: M.affine(x, 12.0, [2, -1], 1.2, [5.0, -3.0], I, [0.5], c),
    ]
    mod_t, mod_tv = F, TF
    for k, x in enumerate(_floats(40, seed=5)):
        for c in _centers(x.shape[2], x.shape[1]):
            for call in calls:
                a = call(mod_t, ours_mode, x, c)
                b = call(mod_tv, tv_mode, x, c)
                assert a.shape == b.shape and a.dtype == b.dtype, (k, c)
                if name == "BILINEAR":
                    atol = 1e-9 if x.dtype == torch.float64 else 1e-5
                    assert (a.double() - b.double()).abs().max().item() <= atol, (k, c)
                else:
                    bad = int(((a.double() - b.double()).abs() > 0).sum())
                    assert bad <= max(6, 0.002 * a.numel()), (k, c, bad)


def test_float_tensor_classes_with_center_are_torchvisions():
    for k, x in enumerate(_floats(20, seed=9)):
        c = [x.shape[2] / 4.0, -2]
        for make in (lambda M: M.RandomRotation(50, M.InterpolationMode.BILINEAR, True, c, 0.5),
                     lambda M: M.RandomAffine(20, (0.1, 0.1), None, 8,
                                              M.InterpolationMode.BILINEAR, 0.3, c)):
            torch.manual_seed(k)
            a = make(T)(x)
            torch.manual_seed(k)
            b = make(TV)(x)
            assert a.shape == b.shape
            atol = 1e-9 if x.dtype == torch.float64 else 1e-5
            assert (a.double() - b.double()).abs().max().item() <= atol, k


@pytest.mark.parametrize("call,error", [
    (lambda M: M.RandomRotation(10, center=5), TypeError),
    (lambda M: M.RandomRotation(10, center=[1, 2, 3]), ValueError),
    (lambda M: M.RandomAffine(10, center=[1]), ValueError),
    (lambda M: M.RandomAffine(10, center={1, 2}), TypeError),
], ids=["rotation_number", "rotation_three", "affine_one", "affine_set"])
def test_class_center_checks_are_torchvisions(call, error):
    with pytest.raises(error):
        call(TV)
    with pytest.raises(error) as e:
        call(T)
    assert "center" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("fn", ["rotate", "affine"])
def test_functional_center_type_check_is_torchvisions(fn):
    img = _images(4, seed=1)[3]
    args = (10.0,) if fn == "rotate" else (10.0, [0, 0], 1.0, [0.0, 0.0])
    for mod in (TF, F):
        with pytest.raises(TypeError, match="center"):
            getattr(mod, fn)(img, *args, center=np.array([1, 2]))


def test_loader_op_takes_center_and_refuses_bad_ones_in_one_line():
    from flowloader import _flowloader
    _flowloader._EagerOp("random_rotation(degrees=10, center=[3.5, -2])")
    _flowloader._EagerOp("random_affine(degrees=10, center=[0, 40])")
    for bad in ("[1]", "[1, 2, 3]", "5"):
        with pytest.raises(ValueError) as e:
            _flowloader._EagerOp(f"random_rotation(degrees=10, center={bad})")
        assert "center" in str(e.value) and "\n" not in str(e.value)
