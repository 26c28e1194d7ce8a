"""flowloader.transforms called on float tensors (docs/python.md, "Float tensors"):
torchvision 0.14's tensor kernels, compared with torchvision's own tensor path for the
same parameters and the same torch seed, over random sizes (1x1 and odd sizes included),
one and three channels, float32 and float64, single images and [B, C, H, W] batches.

Bounds: pixel moves (flips, crops, pads, FiveCrop/TenCrop) exact; resize and the colour
ops within 1e-5 on float32 (1e-12 on float64) before any Normalize; rotate and affine
within 1e-5 (bilinear) or the same pixels but at rounding edges (nearest); perspective
within 1e-4 (its coefficients: a float32 least squares in torchvision).
"""


import numpy as np
import pytest
import torch
import torchvision.transforms as TV
import torchvision.transforms.functional as TF
from PIL import Image

import flowloader.transforms as T
import flowloader.transforms.functional as F
from conftest import spins_during

ATOL = {torch.float32: 1e-5, torch.float64: 1e-12}
# gaussian_blur's kernel is float32 in torchvision whatever the image (its exp and sum
# rounded by torch's vectorized float32 code, ours by libm's: an ulp apart), so float64
# images agree to the kernel's float32 precision.
BLUR_ATOL = {torch.float32: 1e-5, torch.float64: 1e-6}


def _tensors(n, seed, max_side=40):
    """n random float tensors in [0, 1]: [C, H, W] or [B, C, H, W], C 1 or 3, float32 (a
    fifth float64), sides 1..max_side; the first ones 1x1, 1xN, Nx1 and odd."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(3, 1, 1), (1, 1, 1), (3, 1, 9), (3, 7, 1), (3, 7, 3), (1, 5, 11)]
    out = []
    for i in range(n):
        if i < len(shapes):
            shape = shapes[i]
        else:
            c = 1 if torch.rand(1, generator=g).item() < 0.25 else 3
            h, w = (int(v) for v in torch.randint(1, max_side + 1, (2,), generator=g))
            shape = (c, h, w)
            if torch.rand(1, generator=g).item() < 0.15:
                shape = (2,) + shape
        dtype = torch.float64 if i % 5 == 4 else torch.float32
        out.append(torch.rand(shape, generator=g, dtype=dtype))
    return out


def _same(ours, theirs, atol, what):
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, (
        what, tuple(ours.shape), tuple(theirs.shape), ours.dtype, theirs.dtype)
    if atol == 0:
        assert torch.equal(ours, theirs), what
    else:
        diff = (ours.double() - theirs.double()).abs().max().item()
        assert diff <= atol, (what, diff)


def _both(ours_fn, theirs_fn, x, atol, what):
    """Both calls, or both refuse (torchvision's error, ours a one-line ValueError or
    TypeError)."""
    try:
        theirs = theirs_fn(x)
    except (RuntimeError, ValueError, TypeError, IndexError):
        with pytest.raises((ValueError, TypeError)) as e:
            ours_fn(x)
        assert "\n" not in str(e.value)
        return False
    _same(ours_fn(x), theirs, atol, what)
    return True


def test_pixel_moves_are_torchvisions_exactly():
    compared = 0
    for i, x in enumerate(_tensors(200, 1)):
        h, w = x.shape[-2:]
        rng = np.random.default_rng(i)
        top, left = (int(v) for v in rng.integers(-3, 5, 2))
        ch, cw = (int(v) for v in rng.integers(1, 2 * max(h, w) + 2, 2))
        # A box wholly above or left of the image: torchvision's tensor crop slices
        # img[..., :bottom] with a negative bottom (from the end: a wrong size); ours
        # is the zero box PIL's crop gives.
        ch, cw = max(ch, 1 - top), max(cw, 1 - left)
        pads = [int(v) for v in rng.integers(0, 5, 4)]
        cases = [
            ("hflip", F.hflip, TF.hflip),
            ("vflip", F.vflip, TF.vflip),
            ("crop", lambda t: F.crop(t, top, left, ch, cw),
             lambda t: TF.crop(t, top, left, ch, cw)),
            ("center_crop", lambda t: F.center_crop(t, [ch, cw]),
             lambda t: TF.center_crop(t, [ch, cw])),
        ]
        for mode in ("constant", "edge", "reflect", "symmetric"):
            fill = float(rng.random()) if mode == "constant" else 0
            cases.append((f"pad_{mode}", lambda t, m=mode, f=fill: F.pad(t, pads, f, m),
                          lambda t, m=mode, f=fill: TF.pad(t, pads, f, m)))
        for name, ours, theirs in cases:
            compared += _both(ours, theirs, x, 0, (i, name, tuple(x.shape)))
    assert compared > 1500


@pytest.mark.parametrize("make", [
    lambda M: M.RandomCrop(12, padding=3, pad_if_needed=True, padding_mode="reflect"),
    lambda M: M.RandomCrop([9, 13], padding=[1, 2], pad_if_needed=True, fill=0.25),
    lambda M: M.RandomCrop(10, padding=4, padding_mode="symmetric", pad_if_needed=True),
    lambda M: M.RandomCrop(6, pad_if_needed=True, padding_mode="edge"),
    lambda M: M.Pad([2, 3, 0, 5], padding_mode="symmetric"),
    lambda M: M.CenterCrop([15, 8]),
    lambda M: M.RandomHorizontalFlip(),
    lambda M: M.RandomVerticalFlip(),
], ids=["crop_reflect", "crop_fill", "crop_symmetric", "crop_edge", "pad", "center_crop",
        "hflip", "vflip"])
def test_crop_and_flip_classes_draw_and_move_as_torchvision(make):
    ours, theirs = make(T), make(TV)
    compared = 0
    for i, x in enumerate(_tensors(200, 2)):
        torch.manual_seed(i)
        try:
            want = theirs(x)
        except (RuntimeError, ValueError, IndexError):  # torch's pad limits.
            torch.manual_seed(i)
            with pytest.raises(ValueError) as e:
                ours(x)
            assert "\n" not in str(e.value)
            continue
        after = torch.rand(1)
        torch.manual_seed(i)
        _same(ours(x), want, 0, i)
        assert torch.equal(after, torch.rand(1)), "torch's generator left elsewhere"
        compared += 1
    assert compared >= 100


def test_five_and_ten_crop_of_a_float_tensor():
    for i, x in enumerate(_tensors(60, 3, max_side=30)):
        size = [max(1, x.shape[-2] // 2), max(1, x.shape[-1] - 1)]
        for ours, theirs in ((T.FiveCrop(size), TV.FiveCrop(size)),
                             (T.TenCrop(size, vertical_flip=bool(i % 2)),
                              TV.TenCrop(size, vertical_flip=bool(i % 2)))):
            a, b = ours(x), theirs(x)
            assert len(a) == len(b)
            for p, q in zip(a, b):
                _same(p, q, 0, i)


def test_resize_is_torchvisions_tensor_resize():
    modes = [TV.InterpolationMode.NEAREST, TV.InterpolationMode.BILINEAR,
             TV.InterpolationMode.BICUBIC]
    worst = {}
    for i, x in enumerate(_tensors(200, 4)):
        rng = np.random.default_rng(i)
        mode = modes[i % 3]
        ours_mode = T.InterpolationMode(mode.value)
        antialias = True if (i // 3) % 2 and mode != TV.InterpolationMode.NEAREST else None
        size = [int(v) for v in rng.integers(1, 60, 2)] if i % 4 else int(rng.integers(1, 50))
        max_size = None if isinstance(size, list) or i % 8 else size + int(rng.integers(1, 9))
        ours = F.resize(x, size, ours_mode, max_size=max_size, antialias=antialias)
        theirs = TF.resize(x, size, mode, max_size=max_size, antialias=antialias)
        _same(ours, theirs, ATOL[x.dtype], (i, tuple(x.shape), size, mode, antialias))
        key = (mode.value, antialias)
        worst[key] = max(worst.get(key, 0), (ours.double() - theirs.double()).abs().max().item())
    assert len(worst) == 5, worst


def test_resize_of_large_images_by_uneven_ratios():
    """Source indices near 1000 (an ulp there is 6e-5): ATen computes them in double."""
    g = torch.Generator().manual_seed(5)
    x = torch.rand(3, 800, 1000, generator=g)
    B, C, N = (TV.InterpolationMode.BILINEAR, TV.InterpolationMode.BICUBIC,
               TV.InterpolationMode.NEAREST)
    for size, mode in (([224, 224], B), ([301, 97], B), ([224, 333], C), ([997, 1301], B),
                       ([113, 451], N)):
        for t in (x, x[:, 37:781, 101:923], x.double()):
            ours = F.resize(t, size, T.InterpolationMode(mode.value))
            _same(ours, TF.resize(t, size, mode), ATOL[t.dtype], (tuple(t.shape), size, mode))


def _linear_taps(n_in, n_out):
    """ATen's bilinear taps on one axis: index 0, index 1, weights 0 and 1 (float32)."""
    scale = float(np.float32(n_in) / np.float32(n_out))
    taps = []
    for i in range(n_out):
        i0, l1 = i, np.float32(0)
        if n_in != n_out:
            real = max(scale * (i + 0.5) - 0.5, 0.0)
            i0 = min(int(np.floor(real)), n_in - 1)
            l1 = np.float32(min(max(real - i0, 0.0), 1.0))
        taps.append((i0, i0 + (1 if i0 < n_in - 1 else 0), np.float32(1) - l1, l1))
    i0, i1, w0, w1 = zip(*taps)
    return np.array(i0), np.array(i1), np.array(w0, np.float32), np.array(w1, np.float32)


def test_bilinear_resize_sums_in_atens_order():
    """Every path of the float32 bilinear kernel (rows made once and reused, rows fused,
    four columns at a time, the last columns one by one) gives the bits of ATen's order
    of operations: (a w0 + b w1) per row, then row 0 x wy0 + row 1 x wy1, in float32."""
    rng = np.random.default_rng(0)
    for h, w, oh, ow in ((1024, 1024, 256, 256), (800, 900, 224, 224), (301, 97, 37, 41),
                         (9, 13, 4, 1), (100, 3, 50, 2), (40, 40, 20, 80), (20, 30, 50, 45),
                         (30, 30, 20, 29), (7, 1000, 9, 13)):
        a = rng.random((3, h, w), dtype=np.float32)
        yi0, yi1, yw0, yw1 = _linear_taps(h, oh)
        xi0, xi1, xw0, xw1 = _linear_taps(w, ow)
        rows = [a[:, yi][:, :, xi0] * xw0 + a[:, yi][:, :, xi1] * xw1 for yi in (yi0, yi1)]
        want = rows[0] * yw0[:, None] + rows[1] * yw1[:, None]
        got = F.resize(torch.from_numpy(a), [oh, ow]).numpy()
        assert np.array_equal(got, want), ((h, w, oh, ow), np.abs(got - want).max())


@pytest.mark.parametrize("make", [
    lambda M: M.RandomResizedCrop(17),
    lambda M: M.RandomResizedCrop([9, 14], scale=(0.3, 1.0),
                                  interpolation=M.InterpolationMode.BICUBIC),
    lambda M: M.RandomResizedCrop(24, interpolation=M.InterpolationMode.NEAREST),
    lambda M: M.RandomResizedCrop(12, antialias=True),
    lambda M: M.Resize([11, 30], antialias=True, interpolation=M.InterpolationMode.BICUBIC),
    lambda M: M.Resize(13),
], ids=["rrc", "rrc_bicubic", "rrc_nearest", "rrc_antialias", "resize_aa_bicubic", "resize"])
def test_resize_classes_are_torchvisions(make):
    ours, theirs = make(T), make(TV)
    for i, x in enumerate(_tensors(200, 5)):
        torch.manual_seed(i)
        a = ours(x)
        after = torch.rand(1)
        torch.manual_seed(i)
        _same(a, theirs(x), ATOL[x.dtype], i)
        assert torch.equal(after, torch.rand(1))


def _colour_cases(rng):
    return [
        ("brightness", float(rng.uniform(0, 2)), F.adjust_brightness, TF.adjust_brightness),
        ("contrast", float(rng.uniform(0, 2)), F.adjust_contrast, TF.adjust_contrast),
        ("saturation", float(rng.uniform(0, 2)), F.adjust_saturation, TF.adjust_saturation),
        ("hue", float(rng.uniform(-0.5, 0.5)), F.adjust_hue, TF.adjust_hue),
        ("sharpness", float(rng.uniform(0, 3)), F.adjust_sharpness, TF.adjust_sharpness),
        ("solarize", float(rng.uniform(0, 1)), F.solarize, TF.solarize),
        ("gamma", float(rng.uniform(0.2, 3)), F.adjust_gamma, TF.adjust_gamma),
        ("gamma_gain", float(rng.uniform(0.2, 3)), lambda t, g: F.adjust_gamma(t, g, 0.8),
         lambda t, g: TF.adjust_gamma(t, g, 0.8)),
        ("gamma_2", 2.0, F.adjust_gamma, TF.adjust_gamma),
        ("invert", None, F.invert, TF.invert),
        ("autocontrast", None, F.autocontrast, TF.autocontrast),
        ("grayscale", 1, F.rgb_to_grayscale, TF.rgb_to_grayscale),
        ("grayscale_3", 3, F.rgb_to_grayscale, TF.rgb_to_grayscale),
    ]


def test_colour_functionals_are_functional_tensors():
    for i, x in enumerate(_tensors(200, 6)):
        rng = np.random.default_rng(i)
        for name, arg, ours, theirs in _colour_cases(rng):
            if arg is None:
                _both(ours, theirs, x, ATOL[x.dtype], (i, name))
            else:
                _both(lambda t: ours(t, arg), lambda t: theirs(t, arg), x, ATOL[x.dtype],
                      (i, name, arg))
        # A flat image: autocontrast keeps it, hue and saturation of greys.
        flat = torch.full_like(x, 0.375)
        _same(F.autocontrast(flat), TF.autocontrast(flat), 0, i)
        if x.shape[-3] == 3:
            grey = x[..., :1, :, :].expand(x.shape).contiguous()
            _same(F.adjust_hue(grey, 0.2), TF.adjust_hue(grey, 0.2), ATOL[x.dtype], i)


def test_gaussian_blur_is_torchvisions():
    compared = 0
    for i, x in enumerate(_tensors(200, 7)):
        rng = np.random.default_rng(i)
        ks = [int(v) * 2 + 1 for v in rng.integers(0, 6, 2)]
        sigma = float(rng.uniform(0.1, 3))
        compared += _both(lambda t: F.gaussian_blur(t, ks, [sigma, sigma]),
                          lambda t: TF.gaussian_blur(t, ks, [sigma, sigma]), x,
                          BLUR_ATOL[x.dtype], (i, ks, sigma))
    assert compared > 100


@pytest.mark.parametrize("make", [
    lambda M: M.ColorJitter(0.4, 0.4, 0.4, 0.1),
    lambda M: M.ColorJitter(brightness=(0.5, 1.5), hue=(-0.5, 0.5)),
    lambda M: M.Grayscale(),
    lambda M: M.Grayscale(3),
    lambda M: M.RandomGrayscale(0.5),
    lambda M: M.RandomInvert(),
    lambda M: M.RandomSolarize(0.6),
    lambda M: M.RandomAdjustSharpness(2.5),
    lambda M: M.RandomAutocontrast(),
    lambda M: M.GaussianBlur(3, sigma=(0.1, 2.0)),
], ids=["jitter", "jitter_hue", "grayscale", "grayscale3", "random_grayscale", "invert",
        "solarize", "sharpness", "autocontrast", "blur"])
def test_colour_classes_draw_and_compute_as_torchvision(make):
    ours, theirs = make(T), make(TV)
    atol = BLUR_ATOL if isinstance(ours, T.GaussianBlur) else ATOL
    for i, x in enumerate(_tensors(200, 8)):
        torch.manual_seed(i)
        try:
            want = theirs(x)
        except RuntimeError:  # GaussianBlur: torch's reflect pad of a too small image.
            torch.manual_seed(i)
            with pytest.raises(ValueError, match="reflect"):
                ours(x)
            continue
        after = torch.rand(1)
        torch.manual_seed(i)
        _same(ours(x), want, atol[x.dtype], i)
        assert torch.equal(after, torch.rand(1))


def _mismatch(ours, theirs, atol):
    """The share of values further apart than atol (same shape and dtype asserted)."""
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    return ((ours.double() - theirs.double()).abs() > atol).double().mean().item()


@pytest.mark.parametrize("make,bilinear_atol,nearest_share", [
    (lambda M, I: M.RandomRotation(40, interpolation=I), (1e-5, 1e-9), 0.002),
    (lambda M, I: M.RandomRotation([-90, 90], interpolation=I, expand=True, fill=0.25),
     (1e-5, 1e-9), 0.002),
    (lambda M, I: M.RandomAffine(25, (0.2, 0.1), (0.7, 1.3), (-10, 10, -5, 5),
                                 interpolation=I, fill=0.5), (1e-5, 1e-9), 0.002),
    # torchvision solves the perspective coefficients by a float32 least squares, ours in
    # double rounded to float32: the grid moves by ~1e-6 of the side.
    # A nearest sample on a pixel edge then takes the neighbour: on a 3-pixel-wide image
    # many samples are ties (a sixth of the pixels); with torchvision's coefficients the
    # pixels are the same (test_perspective_kernel_with_torchvisions_coefficients).
    # Its coefficients are float32 for float64 images too.
    (lambda M, I: M.RandomPerspective(0.6, p=1.0, interpolation=I), (1e-4, 1e-4), 0.2),
], ids=["rotation", "rotation_expand_fill", "affine", "perspective"])
def test_rotate_affine_perspective_are_torchvisions_grid_sample(make, bilinear_atol,
                                                                nearest_share):
    """Nearest: the same source pixel but where a sample lies within rounding of a pixel
    edge (a share of the values); bilinear: within the bound."""
    worst = {}
    for mode in ("NEAREST", "BILINEAR"):
        ours = make(T, getattr(T.InterpolationMode, mode))
        theirs = make(TV, getattr(TV.InterpolationMode, mode))
        for i, x in enumerate(_tensors(120, 10)):
            torch.manual_seed(i)
            try:
                b = theirs(x)
            except RuntimeError:  # Perspective of a one-pixel side: lstsq fails.
                torch.manual_seed(i)
                with pytest.raises(ValueError, match="no solution"):
                    ours(x)
                continue
            after = torch.rand(1)
            torch.manual_seed(i)
            a = ours(x)
            assert torch.equal(after, torch.rand(1))
            if mode == "BILINEAR":
                atol = bilinear_atol[x.dtype == torch.float64]
                _same(a, b, atol, (i, mode))
            else:
                share = _mismatch(a, b, 0)
                worst[i] = share
                # One pixel of a small image (all its channels, every image of a batch)
                # is a large share.
                assert share * a.numel() <= max(6, nearest_share * a.numel()), (i, share)
    # Most images all alike (perspective: its coefficients move every sample a little).
    exact = sum(v == 0 for v in worst.values()) / len(worst)
    assert exact >= (0.3 if isinstance(ours, T.RandomPerspective) else 0.8), exact


@pytest.mark.parametrize("make", [
    lambda M: M.ElasticTransform(),
    lambda M: M.ElasticTransform(30.0, 2.5, interpolation=M.InterpolationMode.NEAREST,
                                 fill=0.5),
    lambda M: M.ElasticTransform((20.0, 60.0), (3.0, 1.5)),
], ids=["default", "nearest_fill", "two_axes"])
def test_elastic_transform_is_torchvisions(make):
    """get_params' noise planes blurred and scaled as torchvision's, grid_sample in float32
    (float64 images too, as torchvision casts them): bilinear within 5e-5 (the blur's
    rounding times alpha / side), nearest the same pixels but at rounding edges."""
    ours, theirs = make(T), make(TV)
    nearest = ours._args["interpolation"] == "nearest"
    compared = 0
    for i, x in enumerate(_tensors(60, 12, max_side=64)):
        torch.manual_seed(i)
        try:
            want = theirs(x)
        except RuntimeError:  # The blur's reflect pad: an image under half a kernel.
            torch.manual_seed(i)
            with pytest.raises(ValueError, match="reflect"):
                ours(x)
            continue
        after = torch.rand(1)
        torch.manual_seed(i)
        got = ours(x)
        assert torch.equal(after, torch.rand(1))
        if nearest:
            assert _mismatch(got, want, 0) * got.numel() <= max(6, 0.002 * got.numel()), i
        else:
            _same(got, want, 5e-5, i)
        compared += 1
    assert compared >= 10


def test_perspective_kernel_with_torchvisions_coefficients():
    """The grid and grid_sample alone, given torchvision's float32 coefficients: nearest
    exact, bilinear within 1e-5."""
    from torchvision.transforms.functional import _get_perspective_coeffs
    from flowloader import _flowloader
    for i, x in enumerate(_tensors(120, 11)):
        if x.ndim == 4 or min(x.shape[-2:]) < 2:
            continue
        h, w = x.shape[-2:]
        torch.manual_seed(i)
        start, end = TV.RandomPerspective.get_params(w, h, 0.6)
        coeffs = _get_perspective_coeffs(start, end)
        fill = [0.25] * x.shape[0]
        for mode, atol in (("nearest", 0), ("bilinear", ATOL[x.dtype])):
            ours = _flowloader._float_warp(x.numpy(), "perspective", coeffs, h, w, mode, fill)
            theirs = TF.perspective(x, start, end, TV.InterpolationMode(mode), fill=fill)
            _same(torch.from_numpy(ours), theirs, atol, (i, mode))


def test_functional_warps_without_fill_are_plain_grid_sample():
    """F.rotate/affine/perspective with fill=None: grid_sample's zeros, no fill mask
    (the classes always pass a fill: their bilinear edges are darkened by the mask)."""
    x = torch.rand(3, 23, 31)
    B = T.InterpolationMode.BILINEAR
    pts = [[0, 0], [30, 0], [30, 22], [0, 22]]
    ends = [[2, 1], [27, 3], [29, 20], [1, 21]]
    for ours, theirs, atol in (
            (F.rotate(x, 17.0, B), TF.rotate(x, 17.0, TV.InterpolationMode.BILINEAR), 1e-5),
            (F.rotate(x, 17.0, B, fill=0), TF.rotate(x, 17.0, TV.InterpolationMode.BILINEAR,
                                                      fill=0), 1e-5),
            (F.affine(x, -8.0, [2, 3], 1.1, [4.0, 0.0], B),
             TF.affine(x, -8.0, [2, 3], 1.1, [4.0, 0.0], TV.InterpolationMode.BILINEAR), 1e-5),
            (F.perspective(x, pts, ends), TF.perspective(x, pts, ends), 1e-4)):
        _same(ours, theirs, atol, "functional")
    assert not torch.equal(F.rotate(x, 17.0, B), F.rotate(x, 17.0, B, fill=0))


def _images(n, seed):
    rng = np.random.default_rng(seed)
    out = [Image.fromarray(rng.integers(0, 256, (1, 1, 3), dtype=np.uint8), "RGB")]
    while len(out) < n:
        h, w = (int(v) for v in rng.integers(1, 48, 2))
        img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
        out.append(img.convert("L") if len(out) % 4 == 0 else img)
    return out


def test_recipes_that_put_to_tensor_first():
    """Compose([ToTensor(), RandomResizedCrop, flip, ColorJitter, Normalize]) of PIL
    images, and RandomCrop(32, padding=4) of a float tensor in a user's Dataset: the ops
    after ToTensor are torchvision's tensor kernels."""
    def recipe(M):
        return M.Compose([M.ToTensor(), M.RandomResizedCrop(24), M.RandomHorizontalFlip(),
                          M.ColorJitter(0.4, 0.4, 0.4, 0.1), M.RandomGrayscale(0.2),
                          M.Normalize(*((0.5, 0.5, 0.5), (0.25, 0.25, 0.25)))])
    ours, theirs = recipe(T), recipe(TV)
    cifar = (T.Compose([T.ToTensor(), T.RandomCrop(32, padding=4), T.RandomHorizontalFlip()]),
             TV.Compose([TV.ToTensor(), TV.RandomCrop(32, padding=4), TV.RandomHorizontalFlip()]))
    for i, img in enumerate(_images(100, 9)):
        torch.manual_seed(i)
        if img.mode == "L":  # torchvision's 3-value Normalize refuses one channel.
            img = img.convert("RGB")
        a = ours(img)
        torch.manual_seed(i)
        b = theirs(img)
        # ToTensor's x / 255 within 1 ulp, then 1e-5 through the kernels, / std 0.25.
        _same(a, b, 4e-5 + 1e-6, i)
        if min(img.size) < 24:  # RandomCrop(32, padding=4) needs 24 pixels a side.
            continue
        torch.manual_seed(i)
        c = cifar[0](img)
        torch.manual_seed(i)
        _same(c, cifar[1](img), 1e-6, i)


def test_views_and_strided_tensors():
    """A crop inside the image is a view of it (torchvision's too); a resize reads a
    crop in place; transposed and sliced inputs give torchvision's results."""
    x = torch.rand(3, 30, 40)
    crop = F.crop(x, 2, 3, 20, 25)
    assert crop.data_ptr() == TF.crop(x, 2, 3, 20, 25).data_ptr()
    _same(crop, TF.crop(x, 2, 3, 20, 25), 0, "view")
    for t in (x.transpose(1, 2), x[:, 3:27:2, 5:], x[:, :, 4:36], x[:1]):
        for ours, theirs in ((lambda v: F.resized_crop(v, 1, 2, 9, 11, [7, 5]),
                              lambda v: TF.resized_crop(v, 1, 2, 9, 11, [7, 5])),
                             (lambda v: F.resized_crop(v, 1, 2, 9, 11, [17, 4], antialias=True),
                              lambda v: TF.resized_crop(v, 1, 2, 9, 11, [17, 4],
                                                        antialias=True)),
                             (lambda v: F.resize(v, [13, 9]), lambda v: TF.resize(v, [13, 9])),
                             (F.hflip, TF.hflip),
                             (lambda v: F.adjust_hue(v, 0.2) if v.shape[0] == 3 else v,
                              lambda v: TF.adjust_hue(v, 0.2) if v.shape[0] == 3 else v)):
            _same(ours(t), theirs(t), 1e-5, tuple(t.shape))


def test_batches_take_one_draw_for_all_images():
    x = torch.rand(4, 3, 21, 17)
    for make in (lambda M: M.RandomResizedCrop(9), lambda M: M.ColorJitter(0.5, 0.5, 0.5, 0.2),
                 lambda M: M.RandomCrop(19, padding=2)):
        torch.manual_seed(3)
        a = make(T)(x)
        torch.manual_seed(3)
        _same(a, make(TV)(x), 1e-5, "batch")


@pytest.mark.parametrize("make", [
    lambda M: M.CenterCrop(9), lambda M: M.CenterCrop([30, 7]), lambda M: M.RandomCrop(8),
    lambda M: M.RandomCrop(9, padding=3, padding_mode="reflect"),
    lambda M: M.RandomCrop(30, pad_if_needed=True), lambda M: M.Pad([2, 1, 0, 3], fill=0.5),
    lambda M: M.RandomHorizontalFlip(), lambda M: M.RandomVerticalFlip(),
    lambda M: M.Resize(13), lambda M: M.Resize([9, 31], antialias=True),
    lambda M: M.RandomResizedCrop(11), lambda M: M.Grayscale(1), lambda M: M.Grayscale(3),
    lambda M: M.RandomGrayscale(0.5), lambda M: M.ColorJitter(0.4, 0.4, 0.4, 0.1),
    lambda M: M.RandomInvert(), lambda M: M.RandomSolarize(0.4), lambda M: M.RandomAutocontrast(),
    lambda M: M.RandomAdjustSharpness(2), lambda M: M.GaussianBlur(3, (0.1, 2.0)),
    lambda M: M.RandomRotation(20), lambda M: M.RandomAffine(10, (0.1, 0.1), (0.9, 1.1), 5),
    lambda M: M.RandomPerspective(p=1.0),
    lambda M: M.Normalize((0.5, 0.4, 0.3), (0.2, 0.3, 0.4)), lambda M: M.Normalize([0.5], [0.25]),
])
def test_one_image_fast_path_is_the_general_paths(make):
    """One float [C, H, W] image takes _float_fast (no State); a batch of one takes the
    general path: the same draws and the same values, and torchvision's for each."""
    for i, x in enumerate(_tensors(60, 41, max_side=32)):
        if x.ndim != 3 or min(x.shape[1:]) < 12:
            continue
        torch.manual_seed(i)
        one = make(T)(x)
        after_one = torch.rand(1)
        torch.manual_seed(i)
        batch = make(T)(x[None])
        assert torch.equal(torch.rand(1), after_one), i  # As many draws.
        _same(one, batch[0], 0, (i, tuple(x.shape)))
        torch.manual_seed(i)
        try:
            theirs = make(TV)(x)
        except RuntimeError:  # torchvision's in-place Normalize: 3 means on 1 channel.
            assert x.shape[0] == 1 and one.shape[0] == 3
            continue
        _same(one, theirs, 1e-4, (i, tuple(x.shape)))


def test_fast_path_views_grad_and_functional():
    x = torch.rand(3, 20, 30)
    crop = T.CenterCrop(10)(x)
    assert crop.data_ptr() == TV.CenterCrop(10)(x).data_ptr()  # A view, as torchvision's.
    assert T.RandomHorizontalFlip(0.0)(x) is x  # No draw hit: the image itself.
    # A tensor that needs a gradient takes the general path (detached, as before).
    g = x.clone().requires_grad_()
    _same(T.RandomVerticalFlip(1.0)(g), TF.vflip(x), 0, "grad")
    for ours, theirs in ((F.invert, TF.invert), (F.vflip, TF.vflip),
                         (lambda v: F.center_crop(v, 40), lambda v: TF.center_crop(v, 40)),
                         (lambda v: F.crop(v, -2, 3, 9, 40), lambda v: TF.crop(v, -2, 3, 9, 40))):
        for t in (x, x.transpose(1, 2), x[:1].double()):
            _same(ours(t), theirs(t), 0, tuple(t.shape))


def test_grayscale_of_three_channels_is_a_view_as_torchvisions():
    """rgb_to_grayscale(num_output_channels=3) is one plane expanded (stride 0) in
    torchvision; ours too, and what comes after it reads it as three planes."""
    x = torch.rand(3, 17, 23)
    ours, theirs = T.Grayscale(3)(x), TV.Grayscale(3)(x)
    assert ours.stride() == theirs.stride() == (0, 23, 1)
    _same(ours, theirs, 1e-6, "gray")
    for make in (lambda M: M.Compose([M.Grayscale(3), M.RandomHorizontalFlip(1.0),
                                      M.ColorJitter(0.4, 0.4, 0.4, 0.1), M.Resize(9),
                                      M.Normalize((0.5, 0.4, 0.3), (0.2, 0.3, 0.4))]),
                 lambda M: M.Compose([M.RandomGrayscale(1.0), M.Pad(2), M.RandomInvert(1.0),
                                      M.GaussianBlur(3)])):
        for t in (x, x[None].expand(2, 3, 17, 23)):
            torch.manual_seed(1)
            a = make(T)(t)
            torch.manual_seed(1)
            _same(a, make(TV)(t), 1e-5, tuple(t.shape))


def test_float_refusals_are_one_line():
    x = torch.rand(3, 8, 8)
    cases = [
        (T.RandomEqualize(p=1), TypeError, "random_equalize takes uint8"),
        (T.RandomPosterize(4, p=1), TypeError, "random_posterize takes uint8"),
        (T.RandomSolarize(128, p=1), TypeError, "threshold 128"),
        (T.Resize(5, interpolation=T.InterpolationMode.LANCZOS), ValueError, "lanczos"),
        (T.GaussianBlur(17), ValueError, "reflect"),
        (T.RandomCrop(10, padding=8, padding_mode="reflect"), ValueError, "reflect"),
        (T.RandomCrop(10, padding=1, fill=(1, 2, 3)), TypeError, "fill"),
        (T.TrivialAugmentWide(), TypeError, "trivial_augment_wide on a float tensor"),
        (T.ElasticTransform(), ValueError, "reflect"),
        (T.RandomRotation(10, interpolation=T.InterpolationMode.BICUBIC), ValueError,
         "NEAREST and BILINEAR"),
        (T.RandomAffine(10, fill=[0.1, 0.2, 0.3]), ValueError, "broadcast"),
    ]
    for t, kind, words in cases:
        with pytest.raises(kind, match=words) as e:
            t(x[:1] if words == "broadcast" else x)
        assert "\n" not in str(e.value)
    for dtype in (torch.float16, torch.bfloat16, torch.int32):
        with pytest.raises(TypeError, match=str(dtype)) as e:
            T.RandomHorizontalFlip(p=1)(x.to(dtype))
        assert "float64" in str(e.value) and "\n" not in str(e.value)
    # RandomErasing (a native float32 op) on float64: refused, naming both.
    with pytest.raises(TypeError, match="float64"):
        T.RandomErasing(p=1)(x.double())


def test_float64_stays_float64_and_converts_as_torchvision():
    x = torch.rand(3, 9, 7, dtype=torch.float64)
    _same(T.Normalize((0.1, 0.2, 0.3), (0.5, 0.6, 0.7))(x),
          TV.Normalize((0.1, 0.2, 0.3), (0.5, 0.6, 0.7))(x), 0, "normalize")
    _same(T.ConvertImageDtype(torch.float32)(x), TV.ConvertImageDtype(torch.float32)(x), 0,
          "to float32")
    _same(T.ConvertImageDtype(torch.uint8)(x), TV.ConvertImageDtype(torch.uint8)(x), 0,
          "to uint8")
    one = torch.rand(1, 5, 6)
    _same(T.ConvertImageDtype(torch.uint8)(one), TV.ConvertImageDtype(torch.uint8)(one), 0,
          "one channel to uint8")


def test_gil_is_released_in_the_float_kernels():
    big = torch.rand(3, 1024, 1024)
    blur = T.GaussianBlur(31, 8.0)
    # ~0.1 s of native work: the spinning thread runs meanwhile.
    _, _, during = spins_during(lambda: blur(big))
    assert during > 1000
