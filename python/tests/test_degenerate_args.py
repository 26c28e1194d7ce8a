"""Degenerate but valid argument values: what torchvision 0.14 accepts, flowloader accepts.

Each case is a transform written once and built from both modules (`T.` is torchvision's
or flowloader's). torchvision takes it (made, then called on images); flowloader must then
take it too, with torchvision's output: called on the same images under the same seeds it
gives the same pixels and leaves torch's generator (and Python's `random`) where
torchvision's leaves them, and in the loader (a DataLoader over an ImageFolder, and the
same op list written as a YAML spec) it delivers every sample. Values torchvision refuses
are refused in one line. (Earlier, p=2, threshold=256, scale=(0, 1), padding=-1,
fill=None, num_ops=10, magnitude=-1 and others were refused here.)
"""

import os
import random

import numpy as np
import pytest
import torch
import torchvision.transforms as TV
import yaml
from PIL import Image

import flowloader
import flowloader.transforms as FT

# Cases on PIL images: each a transform expression over T. The comment says what
# torchvision does with the value.
PIL_CASES = [
    # p is `torch.rand(1) < p`: any number; 1 or more always, 0 or less never.
    "T.RandomHorizontalFlip(2)", "T.RandomHorizontalFlip(-1)", "T.RandomVerticalFlip(1.5)",
    "T.RandomHorizontalFlip(float('nan'))", "T.RandomGrayscale(2)", "T.RandomInvert(3)",
    "T.RandomEqualize(-0.5)", "T.RandomAutocontrast(7)", "T.RandomSolarize(128, p=5)",
    "T.RandomPosterize(3, p=-2)", "T.RandomAdjustSharpness(2, p=1.5)",
    "T.RandomApply([T.RandomHorizontalFlip(1)], p=2)",
    "T.RandomApply([T.RandomHorizontalFlip(1), T.RandomVerticalFlip(1)], p=5)",
    "T.RandomApply([T.RandomHorizontalFlip(1)], p=-1)",
    # ImageOps.solarize takes any threshold; Sharpness any factor (PIL extrapolates).
    "T.RandomSolarize(256, p=1)", "T.RandomSolarize(-1, p=1)", "T.RandomSolarize(1000, p=1)",
    "T.RandomSolarize(-5.5, p=1)", "T.RandomAdjustSharpness(-1, p=1)",
    "T.RandomAdjustSharpness(-2, p=1)",
    # RandomResizedCrop draws again where the area is 0 or over the image's.
    "T.RandomResizedCrop(16, scale=(0, 1))", "T.RandomResizedCrop(16, scale=(0.0, 0.0))",
    "T.RandomResizedCrop(16, scale=(0.08, 2.0))", "T.RandomResizedCrop(16, scale=(2.0, 3.0))",
    "T.RandomResizedCrop((16, 20), scale=(0, 3))",
    # Resize's max_size: any integer above size.
    "T.Resize(16, max_size=10**9)", "T.Resize(16, max_size=20000)",
    # F.pad crops a side whose padding is negative.
    "T.Pad(-1)", "T.Pad((1, -1))", "T.Pad((-2, 3, 1, -4))", "T.Pad(-3, padding_mode='reflect')",
    "T.Pad((2, -1), padding_mode='symmetric')", "T.Pad((-1, 2), padding_mode='edge')",
    "T.RandomCrop(16, padding=-1)", "T.RandomCrop(16, padding=(-2, 1), padding_mode='reflect')",
    "T.RandomCrop(40, padding=-3, pad_if_needed=True)",
    # fill=None is black; PIL clamps a fill to [0, 255].
    "T.RandomAffine(10, fill=None)", "T.RandomRotation(10, fill=None)",
    "T.RandomCrop(16, padding=2, fill=None)", "T.RandomRotation(10, fill=300)",
    "T.RandomRotation(10, fill=-1)", "T.Pad(2, fill=(300, -5, 1000))",
    "T.RandomAffine(10, fill=256.5)", "T.TrivialAugmentWide(fill=(300, 7, -3))",
    # get_params' corners may move past the opposite side.
    "T.RandomPerspective(1.5, p=1)", "T.RandomPerspective(2, p=1)",
    # RandAugment: any num_ops; magnitudes[magnitude] takes a negative index.
    "T.RandAugment(10)", "T.RandAugment(20)", "T.RandAugment(2, -1)", "T.RandAugment(2, -31)",
    "T.RandAugment(7, 30)",
    # Point ranges and empty lists earlier rounds already took (kept here as a guard).
    "T.RandomResizedCrop(16, scale=(0.5, 0.5), ratio=(1, 1))", "T.RandomAffine(0)",
    "T.RandomAffine((10, 10), translate=(0, 0), scale=(1, 1), shear=(0, 0, 0, 0))",
    "T.ColorJitter(brightness=(1, 1), contrast=0, saturation=(0, 0), hue=(0, 0))",
    "T.GaussianBlur(1, sigma=(0.1, 0.1))", "T.GaussianBlur((1, 3))", "T.RandAugment(0)",
    "T.RandAugment(2, 30)", "T.Pad(0)", "T.RandomOrder([])", "T.RandomApply([])",
    "T.Compose([])", "T.RandomRotation(0, expand=True)", "T.TrivialAugmentWide(2)",
    # _setup_size's int(size): a float size is its integer part (refused before round 6).
    "T.CenterCrop(5.5)", "T.RandomCrop(16.9)", "T.RandomResizedCrop(16.0)",
    # range(num_ops): a negative count draws nothing. scale and ratio: their first two.
    "T.RandAugment(-1)", "T.RandomResizedCrop(16, scale=(0.5, 1.0, 7), ratio=(1, 2, 0))",
    # p a 0-d tensor: torch.rand(1) < p takes it.
    "T.RandomHorizontalFlip(torch.tensor(0.7))", "T.RandomGrayscale(np.float32(0.6))",
    # Never padded: fill and padding_mode are not read.
    "T.RandomCrop(16, padding_mode='wrap')", "T.RandomCrop(16, fill=(1, 2))",
]
# Cases on float tensors (after ToTensor).
TENSOR_CASES = [
    "T.RandomErasing(1, value='random')", "T.RandomErasing(1, value='random', scale=(0.5, 0.5))",
    "T.RandomErasing(1, scale=(0, 0))", "T.RandomErasing(1, ratio=(1, 1))",
    # Normalize refuses only a std of 0; a negative one negates (refused before round 6).
    "T.Normalize((0.5, 0.4, 0.3), (-0.25, 0.5, -2))",
]
# Refused by torchvision (made or called): refused by flowloader, in one line.
REFUSED = [
    "T.RandomErasing(2)", "T.RandomErasing(-0.5)", "T.RandomResizedCrop(16, scale=(1.0, 0.5))",
    "T.RandomResizedCrop(16, ratio=(0, 1))", "T.RandomAffine(-5)",
    "T.RandAugment(2, -32)", "T.Pad(2, fill=1e10)", "T.RandomChoice([])",
    # Round 6: types torchvision refuses (made or called), which flowloader took.
    "T.Resize(7.0)", "T.Resize('7')", "T.Resize(np.int64(7))",
    "T.Resize(7, interpolation='bilinear')", "T.RandomRotation(10, interpolation='nearest')",
    "T.Pad('1')", "T.Pad(1.0)", "T.RandomCrop(5, padding='1')", "T.RandomCrop(5, padding=2.0)",
    "T.GaussianBlur(3, sigma='1')", "T.RandomSolarize('128', p=1)",
    "T.RandomPosterize('4', p=1)", "T.RandomAdjustSharpness('2', p=1)",
    "T.RandAugment(2, 9.5)", "T.AutoAugment('imagenet')", "T.ElasticTransform((1.0,))",
    "T.FiveCrop((5, 6, 7))", "T.TenCrop([5, 6, 7])", "T.CenterCrop((5, 6, 7))",
]


def _images(n=6):
    rng = np.random.default_rng(3)
    return [Image.fromarray(rng.integers(0, 256, (30 + k, 40 - k, 3), dtype=np.uint8), "RGB")
            for k in range(n)]


def _run(module, expr, inputs):
    """The outputs of expr built from `module` over inputs, from seed 7, and where torch's
    and Python's generators stand after them."""
    torch.manual_seed(7)
    random.seed(7)
    t = eval(expr, {"T": module, "np": np, "torch": torch})  # noqa: S307 -- the test's own.
    outs = [np.asarray(t(x.clone() if isinstance(x, torch.Tensor) else x.copy()))
            for x in inputs]
    return outs, torch.rand(1).item(), random.random()


def _same_pixels(expr, ours, theirs):
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype, (expr, a.shape, b.shape)
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        if "Perspective" in expr:
            # torchvision solves the map in float32 (test_eager's rule): a pixel centre on a
            # pixel edge may take the neighbour, at most a line of pixels per side.
            off = diff.max(axis=-1) > 1
            assert off.sum() <= 0.01 * off.size + sum(a.shape[:2]), expr
        else:
            assert diff.max() == 0, (expr, diff.max())


def _check_parity(expr, inputs):
    theirs, t_rand, t_random = _run(TV, expr, inputs)  # torchvision takes it.
    ours, o_rand, o_random = _run(FT, expr, inputs)
    _same_pixels(expr, ours, theirs)
    assert (o_rand, o_random) == (t_rand, t_random), f"{expr}: draws out of step"


@pytest.mark.parametrize("expr", PIL_CASES)
def test_degenerate_value_is_torchvisions_on_pil_images(expr):
    _check_parity(expr, _images())


@pytest.mark.parametrize("expr", TENSOR_CASES)
def test_degenerate_value_is_torchvisions_on_tensors(expr):
    rng = np.random.default_rng(5)
    _check_parity(expr, [torch.from_numpy(rng.random((3, 30, 40), dtype=np.float32))
                         for _ in range(6)])


def _compose(expr, tensor):
    t = eval(expr, {"T": FT, "np": np, "torch": torch})  # noqa: S307
    if tensor:
        return FT.Compose([FT.Resize((16, 16)), FT.ToTensor(), t])
    return FT.Compose([FT.Resize((30, 40)), t, FT.Resize((16, 16))])


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory):
    from conftest import make_dataset
    return make_dataset(tmp_path_factory.mktemp("degenerate") / "data", classes=2,
                        images_per_class=3)


def _delivered(**kwargs):
    n = 0
    with flowloader.DataLoader(batch_size=2, num_workers=1, epochs=1, **kwargs) as loader:
        for batch in loader:
            n += batch[0].shape[0]
    return n


@pytest.mark.parametrize("expr", PIL_CASES + TENSOR_CASES)
def test_degenerate_value_runs_in_the_loader_and_a_spec(expr, tiny_data, tmp_path):
    compose = _compose(expr, expr in TENSOR_CASES)
    assert _delivered(data=tiny_data, transform=compose) == 6
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"data": tiny_data, "stages": [
        {"type": "read"}, {"type": "decode"},
        {"type": "transforms", "ops": compose.to_spec()}]}, default_flow_style=False))
    assert _delivered(spec=str(spec)) == 6


@pytest.mark.parametrize("expr", REFUSED)
def test_what_torchvision_refuses_is_refused_in_one_line(expr):
    with pytest.raises(Exception):  # torchvision refuses it, made or called.
        _run(TV, expr, _images(6))
    with pytest.raises((ValueError, TypeError, IndexError)) as e:
        t = eval(expr, {"T": FT, "np": np, "torch": torch})  # noqa: S307
        t(_images(1)[0])
    message = str(e.value)
    assert "\n" not in message and 0 < len(message) <= 400, message


def test_random_choice_of_nothing_fails_when_called_as_torchvisions(tiny_data):
    t = FT.RandomChoice([])  # Made, as torchvision's; its first call fails.
    with pytest.raises(IndexError):
        t(_images(1)[0])
    with pytest.raises(ValueError, match=r"RandomChoice\(\[\]\) has no transform"):
        flowloader.DataLoader(tiny_data, transform=FT.Compose([t]))


def test_a_blur_kernel_wider_than_the_image_is_a_counted_skip_in_the_loader(tmp_path):
    """torchvision's gaussian_blur (its tensor kernel, PIL images too) reflect-pads by
    kernel_size // 2, which must be less than the image's side: it raises on the 5x5
    images and blurs the 20x20 ones. The loader skips and counts exactly the ones it
    refuses, naming the kernel and the size, instead of blurring them some other way."""
    import torchvision.transforms.functional as TVF
    root = tmp_path / "data" / "c"
    os.makedirs(root)
    sizes = {f"{i}.png": (5, 5) if i % 2 else (20, 20) for i in range(6)}
    refused = set()
    for name, size in sizes.items():
        image = Image.new("RGB", size, (40 * len(name), 90, 200))
        image.save(root / name)
        try:
            TVF.gaussian_blur(image, [11, 11], [1.0, 1.0])
        except RuntimeError:
            refused.add(f"c/{name}")
    assert len(refused) == 3
    transform = FT.Compose([FT.GaussianBlur(11, sigma=1.0), FT.Resize([8, 8])])
    with flowloader.DataLoader(str(tmp_path / "data"), batch_size=6, shuffle=False,
                               transform=transform, return_keys=True) as loader:
        kept = [k for _, _, keys in loader for k in keys]
        stats = loader.stats()
    assert set(kept) == {f"c/{n}" for n in sizes} - refused
    # invalid_argument: the reason of every op's refusal of one sample (random_crop's too).
    assert stats["skipped"] == 3 and stats["errors"] == {"invalid_argument": 3}, stats["errors"]


_CORNERS = [[0, 0], [19, 0], [19, 19], [0, 19]]


@pytest.mark.parametrize("start,end", [
    ([[0, 0]] * 4, _CORNERS),                       # Start points all equal.
    (_CORNERS, [[3, 3]] * 4),                       # End points all equal.
    (_CORNERS, [[0, 0], [5, 0], [10, 0], [15, 0]]),  # End points in a line.
])
@pytest.mark.parametrize("kind", ["pil", "uint8", "float"])
def test_a_perspective_without_solution_is_refused_as_torchvision(start, end, kind):
    """torchvision's F.perspective raises (its least squares) for these points, on every
    image type; flowloader's raises one ValueError naming the points, where it used to
    warp the image some way of its own."""
    import torchvision.transforms.functional as TVF
    import flowloader.transforms.functional as FF
    pil = Image.new("RGB", (20, 20), (10, 120, 30))
    img = {"pil": pil, "uint8": TVF.pil_to_tensor(pil),
           "float": TVF.pil_to_tensor(pil).float() / 255}[kind]
    with pytest.raises(RuntimeError):
        TVF.perspective(img, start, end)
    with pytest.raises(ValueError, match=r"^perspective: startpoints .* have no solution "
                                         r".*no three in a line$") as e:
        FF.perspective(img, start, end)
    assert "\n" not in str(e.value)
    # A solvable map is still taken, on the same image.
    FF.perspective(img, _CORNERS, [[1, 2], [18, 0], [19, 17], [2, 19]])


@pytest.mark.parametrize("call", [
    "T.Resize([True, True])(img)", "T.Resize([True, 2])(img)", "T.Resize([2, True])(img)",
    "T.Resize([True])(img)", "T.Resize(True)(img)", "F.resize(img, [True, True])",
    "F.resize(img, (True, 3))", "T.RandomResizedCrop([True])(img)",
    "T.RandomResizedCrop([True, True])(img)", "T.RandomResizedCrop([3, True])(img)",
    "F.resized_crop(img, 0, 0, 5, 5, [True, True])",
])
@pytest.mark.parametrize("kind", ["pil", "uint8", "float", "one_pixel"])
def test_a_size_starting_with_a_bool_is_refused_on_a_tensor_as_torchvision(call, kind):
    """torchvision hands torch's interpolate a size of two as given, and it refuses a list
    that starts with a bool (TypeError), even of a 1x1 tensor; a PIL image
    takes it (True is 1). flowloader takes and refuses exactly the same, in one line."""
    import torchvision.transforms.functional as TVF
    import flowloader.transforms.functional as FF
    pil = Image.new("RGB", (20, 20), (10, 120, 30))
    img = {"pil": pil, "uint8": TVF.pil_to_tensor(pil),
           "float": TVF.pil_to_tensor(pil).float() / 255,
           "one_pixel": torch.zeros(3, 1, 1, dtype=torch.uint8)}[kind]
    outcomes = []
    for T, F in ((TV, TVF), (FT, FF)):
        try:
            eval(call, {"T": T, "F": F, "img": img})
            outcomes.append(None)
        except (TypeError, ValueError, RuntimeError) as e:
            outcomes.append(e)
    assert (outcomes[0] is None) == (outcomes[1] is None), (call, kind, outcomes)
    if outcomes[1] is not None:
        assert isinstance(outcomes[1], TypeError) and "\n" not in str(outcomes[1])
        assert "starts with a bool" in str(outcomes[1]), outcomes[1]


# Round 7: torchvision accepts these (made and called on RGB images); flowloader refused
# them (an int interpolation of True, a numpy int padding, a truthy expand or
# pad_if_needed, a float blur kernel, which _setup_size truncates).
PIL_CASES_7 = [
    "T.Resize(12, interpolation=True)", "T.Resize(12, interpolation=False)",
    "T.Pad(np.int64(3))", "T.RandomCrop(16, padding=np.int64(2))",
    "T.RandomRotation(10, expand=2)", "T.RandomCrop(40, pad_if_needed=3)",
    "T.GaussianBlur(3.5)", "T.RandomResizedCrop(torch.tensor([12, 10]))",
    # A bool where torchvision's range() or list repetition takes it as an int.
    "T.RandAugment(num_ops=True)", "T.RandAugment(num_ops=np.int64(3))",
]


@pytest.mark.parametrize("expr", PIL_CASES_7)
def test_round_7_values_torchvision_takes_are_taken(expr):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchvision's int interpolation warning.
        _check_parity(expr, _images())


# Round 7: refused by torchvision with this exception class (made or called on an RGB
# image); flowloader refused them with the other class, or took them.
SAME_ERROR_7 = [
    # A str, None or an object where torchvision computes with a number: its TypeError
    # (the op text read '0.5' as a number; None was the op parser's ValueError; a p of
    # '0.5' was struct.error "required argument is not a float").
    "T.RandomHorizontalFlip('0.5')", "T.RandomInvert(None)", "T.RandomSolarize(None)",
    "T.RandomAdjustSharpness(None)", "T.RandomPosterize(None)", "T.GaussianBlur('3')",
    "T.RandAugment(num_ops='3')", "T.TrivialAugmentWide('3')", "T.RandomAdjustSharpness((2, 3))",
    # A float where torchvision takes an int (range, randint, linspace): its TypeError.
    "T.RandAugment(num_ops=1.0)", "T.RandAugment(num_magnitude_bins=7.0)",
    "T.TrivialAugmentWide(7.0)", "T.AugMix(severity=2.0)", "T.GaussianBlur((3.0, 3.0))",
    "T.Resize((8.0, 8.0))", "T.RandomCrop((8.0, 8.0))", "T.RandomResizedCrop((8.0, 8.0))",
    "T.RandomPosterize(2.5)",
    # Sizes: a str is a sequence of its length (ValueError), a dict has a len() (ValueError),
    # items that are not numbers fail the call (TypeError); a numpy int interpolation is
    # no InterpolationMode (TypeError).
    "T.Resize('')", "T.CenterCrop('abc')", "T.RandomCrop({'a': 1})", "T.FiveCrop(('a', 'b'))",
    "T.Resize(12, interpolation=np.int64(2))",
    # ColorJitter's _check_input (a '3' was an IndexError in the draw).
    "T.ColorJitter(brightness='3')", "T.ColorJitter(contrast=None)",
    "T.ColorJitter(saturation=torch.tensor([2, 3]))", "T.ColorJitter(hue=[0.1, 0.9])",
    # Angles, translate, scale and fill of the rotations and warps.
    "T.RandomRotation(None)", "T.RandomRotation('3')", "T.RandomAffine(torch.tensor(3))",
    "T.RandomAffine(10, translate=0)", "T.RandomAffine(10, translate=(0.5, 2))",
    "T.RandomAffine(10, scale=(0, 1))", "T.RandomAffine(10, shear=(1, 2, 3))",
    "T.RandomRotation(10, fill=np.bool_(True))", "T.RandomPerspective(fill=np.bool_(True))",
    "T.RandomRotation(10, fill=(1,))", "T.RandomAffine(10, fill=[5, 6])",
    "T.RandomPerspective(p=1.0, fill=(1, 2))", "T.Pad(2, fill=(1,))", "T.Pad(2, fill=None)",
    "T.Pad(2, fill='3')",
    # RandomResizedCrop's and RandomErasing's constructor checks; GaussianBlur's.
    "T.RandomResizedCrop(10, scale=0.5)", "T.RandomResizedCrop(10, ratio=2)",
    "T.GaussianBlur(4)", "T.GaussianBlur(3, sigma=0)", "T.GaussianBlur(3, sigma=(2, 1))",
    "T.GaussianBlur(3, sigma=(1, 2, 3))", "T.GaussianBlur(('a', 3))",
    "T.AutoAugment(0)", "T.AutoAugment('imagenet')",
    # ElasticTransform's floats; a bool where torch takes the int (randint, linspace);
    # PIL's rotate and transform refuse Pillow's other filters with a ValueError.
    "T.ElasticTransform(alpha=(2, 3))", "T.ElasticTransform(sigma='ab')",
    "T.TrivialAugmentWide(True)", "T.AugMix(severity=True)",
    "T.RandomRotation(10, interpolation=T.InterpolationMode.LANCZOS)",
    "T.RandomAffine(10, interpolation=5)",
]
TENSOR_ERRORS_7 = [
    "T.RandomErasing(scale=0.5)", "T.RandomErasing(ratio='ab')", "T.RandomErasing(value=None)",
    "T.RandomErasing(value='zeros')", "T.RandomErasing(scale=(0.5, 2))",
    "T.RandomErasing(p=(0.5,))",
]


def _error_class(module, expr, img):
    """The exception class expr raises, made from `module` and called on img."""
    try:
        t = eval(expr, {"T": module, "np": np, "torch": torch})  # noqa: S307 -- the test's own.
        torch.manual_seed(0)
        t(img)
    except Exception as e:  # noqa: BLE001 - the class is what is compared.
        return e
    return None


@pytest.mark.parametrize("expr", SAME_ERROR_7 + TENSOR_ERRORS_7)
def test_round_7_torchvisions_refusals_are_its_exception_class(expr):
    import warnings
    img = _images(1)[0]
    if expr in TENSOR_ERRORS_7:
        img = TV.ToTensor()(img)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = _error_class(TV, expr, img)
        ours = _error_class(FT, expr, img)
    assert isinstance(theirs, (TypeError, ValueError)), (expr, theirs)
    assert ours is not None, f"{expr}: taken, torchvision raises {theirs!r}"
    kind = TypeError if isinstance(theirs, TypeError) else ValueError
    assert isinstance(ours, kind), f"{expr}: {ours!r}, torchvision's {theirs!r}"
    message = str(ours)
    assert "\n" not in message and 0 < len(message) <= 400, message


# Round 7, transforms.functional on an RGB image: refused by torchvision with this class.
FUNCTIONAL_ERRORS_7 = [
    "F.resize(img, 2.5)", "F.resize(img, np.int64(8))", "F.resize(img, [8, 9.0])",
    "F.resize(img, '3')", "F.resize(img, ('a', 'b'))", "F.resize(img, [12, 10], max_size=20)",
    "F.resized_crop(img, '', 3, 10, 12, [8, 8])", "F.resized_crop(img, 2, 3, 10, 12, [8, 8.0])",
    "F.resized_crop(img, 2, 3, 10, 12, 2.5)",
    "F.pad(img, 2, fill='3')", "F.pad(img, 2, fill=(1,))", "F.pad(img, 2, padding_mode=1)",
    "F.rotate(img, 30.0, fill=(1,))", "F.affine(img, 10.0, 0, 1.0, 0.0)",
    "F.affine(img, 10.0, ('a', 'b'), 1.0, 0.0)", "F.affine(img, 10.0, [1, 2], 1.0, ('a', 'b'))",
    "F.affine(img, 10.0, [1, 2], 1.0, 0.0, fill=[5])",
    "F.perspective(img, [[0, 0], [30, 0], [30, 22], [0, 22]], "
    "[[1, 1], [29, 0], [30, 20], [2, 22]], fill=(1, 2))",
    "F.gaussian_blur(img, [3, 3], sigma='1')", "F.solarize(img, None)", "F.posterize(img, None)",
    "F.five_crop(img, ('a', 'b'))", "F.ten_crop(img, ('a', 'b'))", "F.adjust_gamma(img, 1.5, (2, 3))",
]
# Taken by torchvision, with these results.
FUNCTIONAL_TAKEN_7 = [
    "F.pad(img, 2, fill=None)", "F.center_crop(img, 8.5)",
    "F.affine(img, 10.0, [1, 2], np.float32(1.2), 0.0)",
]


@pytest.mark.parametrize("expr", FUNCTIONAL_ERRORS_7)
def test_round_7_functional_refusals_are_torchvisions_exception_class(expr):
    import flowloader.transforms.functional as FF
    import torchvision.transforms.functional as TF
    img = _images(1)[0]

    def error(module):
        try:
            eval(expr, {"F": module, "np": np, "torch": torch, "img": img})  # noqa: S307
        except Exception as e:  # noqa: BLE001 - the class is what is compared.
            return e
        return None
    theirs, ours = error(TF), error(FF)
    assert isinstance(theirs, (TypeError, ValueError)), (expr, theirs)
    kind = TypeError if isinstance(theirs, TypeError) else ValueError
    assert isinstance(ours, kind), f"{expr}: {ours!r}, torchvision's {theirs!r}"
    assert "\n" not in str(ours) and 0 < len(str(ours)) <= 400, str(ours)


@pytest.mark.parametrize("expr", FUNCTIONAL_TAKEN_7)
def test_round_7_functional_values_torchvision_takes_are_taken(expr):
    import flowloader.transforms.functional as FF
    import torchvision.transforms.functional as TF
    img = _images(1)[0]
    outs = [np.asarray(eval(expr, {"F": module, "np": np, "torch": torch, "img": img}))  # noqa
            for module in (TF, FF)]
    assert outs[0].shape == outs[1].shape and np.array_equal(outs[0], outs[1]), expr


# Round 8 (issue 35): a numpy scalar fill on a PIL image. torchvision's _parse_fill repeats
# only a Python int or float per channel; PIL reads the one numpy value as a packed colour
# (0xBBGGRR of its truncated int: np.int64(300) is red 44, green 1, blue 0), a tint.
# On an L image the value is clamped, as a Python number's.
NUMPY_FILL_8 = [
    "T.RandomRotation((30, 30), fill=np.int64(300))", "T.RandomRotation(40, fill=np.int32(-2))",
    "T.RandomAffine(30, fill=np.uint8(200))", "T.RandomAffine(30, fill=np.float32(-2.5))",
    "T.RandomPerspective(0.8, p=1, fill=np.int16(70000 % 32768))",
    "T.Pad(3, fill=np.int64(0x123456))", "T.RandomCrop(36, padding=4, fill=np.int64(300))",
    "T.RandomCrop(45, pad_if_needed=True, fill=np.float16(3.7))",
    "T.RandAugment(3, 20, fill=np.int64(0xABCDEF))", "T.TrivialAugmentWide(fill=np.int8(-3))",
    "T.AutoAugment(fill=np.int64(300))",
    "T.RandomRotation(30, fill=np.float64(300.7))",  # A Python float: repeated, clamped.
]


@pytest.mark.parametrize("expr", NUMPY_FILL_8)
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_round_8_numpy_fill_is_pils_packed_colour_as_torchvisions(expr, mode):
    _check_parity(expr, [img.convert(mode) for img in _images()])


NUMPY_FILL_FUNCTIONAL_8 = [
    "F.rotate(img, 30.0, fill=np.int64(300))", "F.rotate(img, 30.0, fill=np.float32(-1.5))",
    "F.affine(img, 20.0, [1, 2], 1.0, [0.0, 0.0], fill=np.uint8(99))",
    "F.perspective(img, [[0, 0], [30, 0], [30, 22], [0, 22]], "
    "[[3, 4], [27, 0], [30, 20], [2, 18]], fill=np.int64(0xFF00FF))",
    "F.pad(img, [2, 3], fill=np.int32(-1))", "F.pad(img, 2, fill=np.int64(256 + 7))",
]


@pytest.mark.parametrize("expr", NUMPY_FILL_FUNCTIONAL_8)
@pytest.mark.parametrize("mode", ["RGB", "L"])
def test_round_8_functional_numpy_fill_is_pils_packed_colour(expr, mode):
    import flowloader.transforms.functional as FF
    import torchvision.transforms.functional as TF
    img = _images(1)[0].convert(mode)
    outs = [np.asarray(eval(expr, {"F": module, "np": np, "torch": torch, "img": img}))  # noqa
            for module in (TF, FF)]
    assert outs[0].shape == outs[1].shape, expr
    _same_pixels(expr, [outs[1]], [outs[0]])


@pytest.mark.parametrize("fn", ["adjust_brightness", "adjust_contrast", "adjust_saturation",
                                "adjust_sharpness"])
@pytest.mark.parametrize("factor", [-0.01, -0.5, -1, -2.5, -7])
def test_round_8_a_negative_enhance_factor_extrapolates_on_pil_as_torchvision(fn, factor):
    """torchvision's PIL path (ImageEnhance's blend) takes a negative factor and
    extrapolates, clamped; its tensor kernels refuse it. flowloader: the same pixels on
    RGB and L images, the same ValueError on uint8 and float tensors."""
    import flowloader.transforms.functional as FF
    import torchvision.transforms.functional as TF
    img = _images(1)[0]
    for image in (img, img.convert("L")):
        theirs = np.asarray(getattr(TF, fn)(image, factor))
        ours = np.asarray(getattr(FF, fn)(image, factor))
        assert ours.shape == theirs.shape and np.array_equal(ours, theirs), (fn, image.mode)
    for tensor in (TF.pil_to_tensor(img), TF.to_tensor(img)):
        with pytest.raises(ValueError):
            getattr(TF, fn)(tensor, factor)
        with pytest.raises(ValueError, match="is not non-negative"):
            getattr(FF, fn)(tensor, factor)


def _same_warp(ours, theirs, is_float, what):
    """The same bytes (a PIL image), or within 1e-5 with NaN where torchvision's has NaN (a
    float tensor: a map through infinity gives grid_sample NaN)."""
    assert np.array_equal(np.isnan(ours), np.isnan(theirs)), what
    diff = np.abs(np.nan_to_num(ours) - np.nan_to_num(theirs))
    assert diff.max(initial=0) <= (1e-5 if is_float else 0), what


def _small_images(n, seed):
    """n RGB and L images of 2 to 40 pixels a side (thin ones included): where a large
    distortion_scale draws an ill-conditioned map most often."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        w, h = (int(v) for v in rng.integers(2, 41, 2))
        img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), "RGB")
        out.append(img.convert("L") if k % 3 == 2 else img)
    return out


@pytest.mark.parametrize("scale", [1.0, 1.5, 2.0, 5.0])
@pytest.mark.parametrize("mode", ["BILINEAR", "NEAREST"])
def test_round_8_perspective_distortion_above_one_is_torchvisions(scale, mode):
    """A distortion_scale of 1 or more moves corners past the opposite side: the map is
    often ill-conditioned, where torchvision's float32 least squares and a double solve
    part by more than a pixel edge. Eager calls take torch's solution: PIL images the
    same bytes, float tensors within 1e-5, the draws in step (get_params' randint)."""
    seen = 0
    for k, img in enumerate(_small_images(80, seed=11)):
        for x in (img, TV.functional.to_tensor(img)):
            outs = []
            for module in (TV, FT):
                torch.manual_seed(k)
                t = module.RandomPerspective(scale, p=1,
                                             interpolation=getattr(module.InterpolationMode, mode))
                try:
                    outs.append((np.asarray(t(x)).astype(np.float64), torch.rand(1).item()))
                except (RuntimeError, ValueError):  # Points in a line: lstsq raises.
                    outs.append(None)
            if outs[0] is None:
                continue
            (a, a_next), (b, b_next) = outs[1], outs[0]
            assert a.shape == b.shape and a_next == b_next, (k, img.size, scale)
            _same_warp(a, b, isinstance(x, torch.Tensor), (k, img.size, img.mode, scale))
            seen += 1
    assert seen >= 120


def test_round_8_functional_perspective_of_an_ill_conditioned_map_is_torchvisions():
    import flowloader.transforms.functional as FF
    import torchvision.transforms.functional as TF
    rng = np.random.default_rng(2)
    for k, img in enumerate(_small_images(60, seed=12)):
        w, h = img.size
        start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        end = [[int(rng.integers(-w, 2 * w)), int(rng.integers(-h, 2 * h))] for _ in range(4)]
        for x in (img, TF.to_tensor(img)):
            try:
                theirs = np.asarray(TF.perspective(x, start, end)).astype(np.float64)
            except RuntimeError:
                continue
            ours = np.asarray(FF.perspective(x, start, end)).astype(np.float64)
            _same_warp(ours, theirs, isinstance(x, torch.Tensor), (k, img.size, end))


def test_round_8_a_huge_distortion_scale_draws_in_the_loader(tmp_path):
    """distortion_scale * half the width past int32 (10^6 * 2200): the loader's draw
    converted it to an int (undefined behaviour; on x86 it happened to deliver); it draws
    in int64 as Python's ints do, and delivers."""
    root = tmp_path / "data" / "c"
    os.makedirs(root)
    Image.new("RGB", (4400, 6), (10, 200, 30)).save(root / "wide.png")
    Image.new("RGB", (6, 4400), (10, 200, 30)).save(root / "tall.png")
    transform = FT.Compose([FT.RandomPerspective(1e6, p=1), FT.Resize((4, 4))])
    assert _delivered(data=str(tmp_path / "data"), transform=transform) == 2


def test_round_8_numpy_fill_in_the_loader_is_pils_packed_colour(tmp_path):
    """The loader's images are RGB, as ImageFolder's PIL images: a numpy fill is the
    packed colour there too (the bytes torchvision gives the decoded PNG)."""
    import torchvision.transforms.functional as TF
    root = tmp_path / "data" / "c"
    os.makedirs(root)
    src = _images(1)[0]
    src.save(root / "a.png")
    # (A Resize to its own size: the batch's fixed size; PIL's resize then copies.)
    ours = FT.Compose([FT.Resize(src.size[::-1]), FT.RandomRotation((40, 40), fill=np.int64(300)),
                       FT.ToTensor()])
    with flowloader.DataLoader(str(tmp_path / "data"), batch_size=1, transform=ours) as loader:
        (images, _), = list(loader)
    theirs = TF.to_tensor(TV.RandomRotation((40, 40), fill=np.int64(300))(
        Image.open(root / "a.png").convert("RGB")))
    assert torch.allclose(images[0].cpu(), theirs, rtol=0, atol=1e-6)
    assert (theirs[:, 0, 0] * 255).round().tolist() == [44, 1, 0]  # The packed colour.


@pytest.mark.parametrize("wrap", ["RandomApply([{}], p=1)", "RandomChoice([{}])",
                                  "RandomApply([{}, T.RandomVerticalFlip(0)], p=1)",
                                  "RandomOrder([{}])"])
def test_round_9_numpy_fill_inside_random_apply_or_choice_is_packed(wrap, tmp_path):
    """Inside RandomApply / RandomChoice / RandomOrder, the loader's numpy fill is PIL's
    packed colour too, as torchvision's (which hands it to PIL as one value)."""
    import torchvision.transforms.functional as TF
    root = tmp_path / "data" / "c"
    os.makedirs(root)
    src = _images(1)[0]
    src.save(root / "a.png")
    inner = "T.RandomAffine((30, 30), fill=np.int64(300))"
    expr = "T." + wrap.format(inner)

    def build(module):
        return eval(expr, {"T": module, "np": np})  # noqa: S307 -- the test's own.
    ours = FT.Compose([FT.Resize(src.size[::-1]), build(FT), FT.ToTensor()])
    with flowloader.DataLoader(str(tmp_path / "data"), batch_size=1, transform=ours) as loader:
        (images, _), = list(loader)
    theirs = TF.to_tensor(build(TV)(Image.open(root / "a.png").convert("RGB")))
    assert torch.allclose(images[0].cpu(), theirs, rtol=0, atol=1e-6)
    assert (theirs[:, 0, 0] * 255).round().tolist() == [44, 1, 0]  # The packed colour.
