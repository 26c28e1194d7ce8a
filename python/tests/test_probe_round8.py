"""What round 8's differential probe (issue 35; random argument combinations against
torchvision 0.14, kept outside the repository) found, each case written once over `M`
(torchvision's module or flowloader's) and run from both on the same image and seed:
the same pixels and generator state, or the same exception class (flowloader's message
one line)."""

import random
import warnings

import numpy as np
import pytest
import torch
import torchvision.transforms as TV
import torchvision.transforms.functional as TF
from PIL import Image

import flowloader.transforms as FT
import flowloader.transforms.functional as FF


def _image(kind, w=13, h=9):
    rng = np.random.default_rng(8)
    base = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if kind == "pil":
        return Image.fromarray(base, "RGB")
    if kind == "L":
        return Image.fromarray(base[:, :, 0], "L")
    if kind in ("RGBA", "P", "I;16"):
        rgb = Image.fromarray(base, "RGB")
        return rgb.convert(kind) if kind != "I;16" else Image.fromarray(
            base[:, :, 0].astype(np.uint16) * 200).convert("I;16")
    t = torch.from_numpy(base).permute(2, 0, 1).contiguous()
    return {"u8": t, "u8_1": t[:1].clone(), "float": t.float() / 255,
            "batch_u8": torch.stack([t, t.flip(-1)])}[kind]


def _run(expr, functional, module_pair, img):
    module = module_pair[0] if functional else module_pair[1]
    torch.manual_seed(5)
    random.seed(5)
    x = img.clone() if isinstance(img, torch.Tensor) else img.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = eval(expr, {"M": module, "np": np, "torch": torch, "x": x})  # noqa: S307
        except Exception as e:  # noqa: BLE001 -- the class is compared.
            return e, torch.rand(2)
    return out, torch.rand(2)


def _compare(expr, kind):
    functional = not expr.split("(")[0][2:3].isupper()
    img = _image(kind)
    theirs, after_theirs = _run(expr, functional, (TF, TV), img)
    ours, after_ours = _run(expr, functional, (FF, FT), img)
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), (theirs, ours)
        assert "\n" not in str(ours)
        return theirs
    assert not isinstance(ours, Exception), ours
    assert torch.equal(after_ours, after_theirs)
    if isinstance(theirs, Image.Image):
        assert ours.mode == theirs.mode and ours.size == theirs.size
    a, b = np.asarray(ours), np.asarray(theirs)
    if a.dtype.kind == "f":  # torchvision's float kernels: within its tolerance.
        assert a.shape == b.shape and np.allclose(a, b, rtol=0, atol=1e-5, equal_nan=True)
    else:
        assert np.array_equal(a, b)
    return theirs


@pytest.mark.parametrize("expr,kind", [
    # A uint8 tensor compares with an integer threshold cast to uint8: -1 is 255.
    ("M.solarize(x, -1)", "u8"), ("M.solarize(x, -300)", "u8_1"),
    ("M.solarize(x, torch.tensor(-1))", "u8"), ("M.solarize(x, -0.5)", "u8"),
    ("M.RandomSolarize(-1, p=1)(x)", "batch_u8"), ("M.RandomSolarize(-1, p=1)(x)", "pil"),
    ("M.RandomSolarize(torch.tensor(-3), p=1)(x)", "u8"),
    # An L image to three channels is RGB; a one-channel tensor stays one channel.
    ("M.to_grayscale(x, num_output_channels=3)", "L"),
    ("M.rgb_to_grayscale(x, num_output_channels=3)", "L"),
    ("M.rgb_to_grayscale(x, num_output_channels=3)", "u8_1"),
    ("M.Grayscale(3)(x)", "u8_1"), ("M.Grayscale(3)(x)", "L"),
    # A PIL crop box of floats: Image.crop rounds each edge (half to even).
    ("M.crop(x, 1, 1.5, 7.5, 4)", "pil"), ("M.crop(x, -3, 3, 7.5, 6.5)", "L"),
    ("M.crop(x, 2.5, 1.5, 3.5, 2.5)", "pil"),
    ("M.resized_crop(x, 2, 1, 7.5, 5, (3, 4))", "pil"),
    ("M.resized_crop(x, 5.5, 0, 3, 6.5, 6)", "pil"),
    ("M.resized_crop(x, 2, 1, 7.5, 4, [7])", "u8"),  # A tensor's slice: TypeError.
    # ToTensor / PILToTensor of any PIL mode: torchvision's numpy conversion.
    ("M.ToTensor()(x)", "RGBA"), ("M.PILToTensor()(x)", "P"), ("M.to_tensor(x)", "I;16"),
    ("M.pil_to_tensor(x)", "RGBA"), ("M.to_tensor(x)", "P"),
    # A fill PIL cannot take fails where torchvision parses it: after the coin, in a
    # constant pad, where a policy draws a warp (otherwise it is never read).
    ("M.RandomPerspective(p=0, fill=float('nan'))(x)", "pil"),
    ("M.RandomPerspective(p=1, fill=float('nan'))(x)", "pil"),
    ("M.Pad(2, fill=1e10, padding_mode='edge')(x)", "pil"),
    ("M.Pad(2, fill=1e10)(x)", "L"),
    ("[M.TrivialAugmentWide(fill=float('nan'))(x) for _ in range(4)]", "pil"),
    ("[M.RandAugment(fill=1e10)(x) for _ in range(3)]", "pil"),
    ("M.RandomRotation('15')(x)", "pil"),  # degrees [1.0, 5.0].
    # A class drawing `torch.rand(1) < p` first reads its other arguments only when the
    # coin applies it: a value its F call refuses fails then only.
    ("[M.RandomPosterize(-1)(x) for _ in range(6)]", "pil"),
    ("[M.RandomPosterize(9, p=0.3)(x) for _ in range(2)]", "u8"),
    ("[M.RandomSolarize(None)(x) for _ in range(2)]", "float"),
    ("[M.RandomAdjustSharpness(None)(x) for _ in range(2)]", "pil"),
    ("[M.RandomPerspective(distortion_scale='0.5')(x) for _ in range(2)]", "u8"),
    ("[M.RandomSolarize('a')(x) for _ in range(3)]", "float"),
    ("[M.RandomAdjustSharpness('2', p=0.2)(x) for _ in range(2)]", "pil"),
    ("[M.RandomPosterize('4')(x) for _ in range(3)]", "u8"),
    # A float tensor of one pixel a side, permuted (odd strides numpy keeps): resized.
    ("M.Resize((6, 9))(x[..., :1, :1].permute(1, 2, 0).permute(2, 0, 1))", "float"),
])
def test_pixels_and_classes_as_torchvision(expr, kind):
    _compare(expr, kind)


@pytest.mark.parametrize("expr,kind", [
    # Sizes of 0 or less: torch's interpolate RuntimeError on tensors, PIL's ValueError.
    ("M.Resize(0)(x)", "u8"), ("M.Resize(-2)(x)", "float"), ("M.resize(x, (0, 4))", "u8"),
    ("M.RandomResizedCrop(0)(x)", "float"), ("M.Resize(0)(x)", "pil"),
    # Reversed ranges: torch's uniform_ RuntimeError.
    ("M.RandomRotation((30, 10))(x)", "pil"), ("M.RandomAffine((30, 10))(x)", "u8"),
    ("M.RandomAffine(0, shear=(10, 5))(x)", "pil"),
    ("M.RandomResizedCrop(8, ratio=(2.0, 0.5))(x)", "float"),
    ("M.RandomResizedCrop(8, scale=(1.0, 0.5))(x)", "pil"),
    ("M.RandomErasing(p=1, ratio=(2.0, 0.5))(x)", "float"),
    ("M.TrivialAugmentWide(num_magnitude_bins=0)(x)", "u8"),
    # RandAugment indexes its bins: IndexError.
    ("M.RandAugment(magnitude=31)(x)", "pil"), ("M.RandAugment(num_magnitude_bins=0)(x)", "u8"),
    # torch's reflect pad of a blur kernel wider than the image: RuntimeError.
    ("M.gaussian_blur(x, 101)", "pil"), ("M.GaussianBlur(3)(x[..., :1, :])", "float"),
    # perspective: not four points (view(8)), or no single map (torch.linalg.LinAlgError).
    ("M.perspective(x, [[0, 0], [7, 0], [7, 5]], [[0, 0], [7, 0], [7, 5], [0, 5]])", "pil"),
    ("M.perspective(x, [[0, 0]] * 4, [[2, 2], [5, 1], [6, 4], [1, 5]])", "u8"),
    # ElasticTransform blurs its noise with F.gaussian_blur: a reflect pad.
    ("M.ElasticTransform(sigma=0.5)(x[..., :2, :])", "u8"),
    ("M.ElasticTransform()(x[..., :7, :5])", "float"),
    # A tensor's sharpness kernel refuses a negative factor (when the coin applies it).
    ("M.RandomAdjustSharpness(-1, p=1)(x)", "u8_1"),
    # A tensor's pad takes a Python int padding, and a Python number fill in any mode.
    ("M.pad(x, np.int64(2), padding_mode='reflect')", "float"),
    ("M.Pad(np.int64(2), padding_mode='symmetric')(x)", "u8"),
    ("M.pad(x, (0, 0, 4, 0), fill=np.int64(300), padding_mode='reflect')", "u8"),
    ("M.Pad((1, 2), fill=[1, 2, 3], padding_mode='edge')(x)", "float"),
    ("M.RandomCrop(8, padding=np.int64(1))(x)", "batch_u8"),
    # A tensor's crops slice with ints: a float in a size sequence is a TypeError.
    ("M.CenterCrop((6.0, 9.0))(x)", "u8"), ("M.center_crop(x, (6.0, 9.0))", "float"),
    ("M.FiveCrop((6.0, 9.0))(x)", "u8_1"), ("M.ten_crop(x, (6.0, 9.0))", "batch_u8"),
    # A scale or ratio of one value: get_params' [1], an IndexError.
    ("M.RandomErasing(p=1, ratio=[1])(x)", "float"), ("M.RandomResizedCrop(8, scale=[0.2])(x)",
                                                     "pil"),
    # A str is a sequence of its characters: weights of the wrong count, a sigma or size
    # of the wrong length (ValueError), degrees '10' as [1.0, 0.0] (uniform_'s range).
    ("M.RandomChoice([M.Pad(2)], p='0.5')(x)", "u8"), ("M.GaussianBlur(3, sigma='1')(x)", "pil"),
    ("M.five_crop(x, '8')", "u8"), ("M.center_crop(x, '8')", "pil"),
    ("M.RandomRotation('10')(x)", "pil"), ("M.RandomAffine('10')(x)", "float"),
    # Pad checks padding's type before padding_mode; AugMix's int alpha is a Long tensor.
    ("M.Pad(None, padding_mode=None)(x)", "pil"), ("M.AugMix(alpha=1)(x)", "pil"),
    # A PIL filter in a tensor's resize: torch's interpolate's NotImplementedError.
    ("M.resize(x, 8, interpolation=M.InterpolationMode.LANCZOS)", "float"),
    ("M.Resize(5, interpolation=M.InterpolationMode.HAMMING)(x)", "u8"),
    # A perspective with no single map on a float tensor: torch's LinAlgError.
    ("M.RandomPerspective(1.0, p=1)(x[..., :1, :])", "float"),
    # A negative padding that crops the whole image away: torch's RuntimeError on a
    # tensor (PIL's crop's ValueError).
    ("M.pad(x, (2, -5))", "float"), ("M.Pad(-5)(x)", "u8_1"), ("M.pad(x, -5)", "pil"),
    # A str where torchvision converts a number: float() / int() / torch.tensor()'s
    # ValueError (when the coin applies it, for RandomPerspective).
    ("M.RandomPerspective(fill='a', p=1)(x)", "u8"),
    ("M.RandomPerspective(distortion_scale='0.5', p=1)(x)", "pil"),
    ("M.AugMix(alpha='a')(x)", "u8"), ("M.TrivialAugmentWide(fill='a')(x)", "u8_1"),
    # NaN degrees: uniform_'s "from is out of bounds" RuntimeError.
    ("M.RandomRotation(float('nan'))(x)", "L"),
    # A float crop size larger than a PIL image: float paddings, PIL's TypeError.
    ("M.center_crop(x, (6.0, 19.0))", "pil"), ("M.CenterCrop((16.0, 9.0))(x)", "L"),
    # A PIL mode flowloader does not take, where PIL or torchvision fail on it: their
    # OSError / ValueError (flowloader's refusal is both, and a TypeError).
    ("M.autocontrast(x)", "RGBA"), ("M.equalize(x)", "RGBA"), ("M.solarize(x, 100)", "I;16"),
    ("M.adjust_sharpness(x, 2)", "P"), ("M.RandomEqualize(p=1)(x)", "RGBA"),
    ("M.posterize(x, 4)", "RGBA"), ("M.invert(x)", "RGBA"),
])
def test_refusals_are_torchvisions_class(expr, kind):
    theirs = _compare(expr, kind)
    assert isinstance(theirs, Exception)  # torchvision refuses each of these.


def test_elastic_takes_a_fill_past_a_c_int():
    """ElasticTransform blends a float fill (its tensor kernel, PIL images too): 1e10 is
    torch's uint8 cast of it, as torchvision's, not PIL's int() refusal."""
    for kind in ("pil", "u8"):
        img = _image(kind, 40, 30)
        for module in (TV, FT):
            torch.manual_seed(1)
            out = np.asarray(module.ElasticTransform(80.0, 2.0, fill=1e10)(img))
            assert out.shape == np.asarray(img).shape


@pytest.mark.parametrize("make", [
    # RandomApply's `p < torch.rand(1)`: NaN never skips, a 0-d tensor is a number.
    lambda M: M.RandomApply([M.RandomInvert(1.0), M.RandomHorizontalFlip(1.0)],
                            p=float("nan")),
    lambda M: M.RandomApply([M.RandomGrayscale(1.0)], p=torch.tensor(1.0)),
    # A padding mode other than constant never reads the fill.
    lambda M: M.Pad(3, fill=1e10, padding_mode="symmetric"),
    lambda M: M.RandomCrop((21, 25), padding=2, fill=float("nan"), padding_mode="edge"),
], ids=["apply_nan_p", "apply_tensor_p", "pad_mode_fill", "crop_mode_fill"])
def test_loader_takes_what_torchvision_takes(make, tmp_path):
    """The loader's op list made from a transform torchvision runs on every image
    delivers torchvision's pixels (these were refused when the loader was made)."""
    import os

    import flowloader
    root = tmp_path / "c"
    os.makedirs(root)
    img = _image("pil", 21, 17)
    img.save(root / "a.png")
    # (A Resize to its own size first: the batch's fixed size; PIL's resize then copies.)
    ours = FT.Compose([FT.Resize((17, 21)), make(FT), FT.ToTensor()])
    with flowloader.DataLoader(str(tmp_path), batch_size=1, transform=ours) as loader:
        (images, _), = list(loader)
    theirs = TF.to_tensor(make(TV)(Image.open(root / "a.png").convert("RGB")))
    if theirs.shape[0] == 1:
        theirs = theirs.expand(3, -1, -1)
    assert torch.allclose(images[0].cpu().expand_as(theirs), theirs, rtol=0, atol=1e-6)
