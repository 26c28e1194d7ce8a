"""Misuse of the Python API is one line in Python terms: a ValueError or TypeError that
names the key and the value (cut to 200 characters), never a pybind11 signature dump or a
multi-line repr."""

import numpy as np
import pytest
from PIL import Image

import flowloader
import flowloader.transforms as T


def one_line(raised):
    message = str(raised.value)
    assert "\n" not in message, message[:2000]
    assert "Invoked with" not in message and "incompatible" not in message, message[:2000]
    assert len(message) < 600, f"{len(message)} characters: {message[:300]}..."
    return message


@pytest.fixture(scope="module")
def loader(small_data):
    with flowloader.DataLoader(small_data, batch_size=6, image_size=16) as made:
        yield made


@pytest.mark.parametrize("key,value,error,words", [
    ("epoch", 2**64, ValueError, "state_dict's epoch must be in [0, 4611686018427387904], "
                                 "got 18446744073709551616"),
    ("epoch", "3", TypeError, "state_dict's epoch must be an int, got str '3'"),
    ("epoch", 3.0, TypeError, "state_dict's epoch must be an int, got float 3.0"),
    ("epoch", -1, ValueError, "state_dict's epoch must be in [0, "),
    ("batch", 2**63, ValueError, f"state_dict's batch must be in [0, 36], got {2**63}"),
    ("sample", 2**70, ValueError, f"state_dict's sample must be in [-1, 36], got {2**70}"),
    ("current_batch_size", 7, ValueError, "state_dict's current_batch_size must be in [0, 6]"),
    ("epoch", "x" * 10**6, TypeError, "got str 'xxxx"),
], ids=["epoch_2_64", "epoch_str", "epoch_float", "epoch_negative", "batch_2_63",
        "sample_2_70", "current_batch_size", "epoch_1mb_str"])
def test_a_forged_state_dict_is_one_line_naming_the_key(loader, key, value, error, words):
    state = loader.state_dict() | {key: value}
    with pytest.raises(error) as raised:
        loader.load_state_dict(state)
    assert words in one_line(raised)
    next(iter(loader))  # The loader is unharmed.


def test_a_state_dict_without_its_position_is_a_key_error(loader):
    state = loader.state_dict()
    del state["batch"]
    with pytest.raises(KeyError, match="state_dict has no 'batch'"):
        loader.load_state_dict(state)


def test_huge_ints_in_calls_are_one_line(loader):
    with pytest.raises(ValueError) as raised:
        loader.set_epoch(2**70)
    assert f"set_epoch's epoch must be in [0, 4611686018427387904], got {2**70}" in \
        one_line(raised)
    with pytest.raises(ValueError) as raised:
        loader.set_batch_size(2**70)
    assert "batch_size must be in [1, 2147483647]" in one_line(raised)
    with pytest.raises(TypeError) as raised:
        loader.set_epoch("2")
    assert "set_epoch's epoch must be an int, got str '2'" in one_line(raised)
    loader.set_epoch(0)
    assert next(iter(loader))[0].shape[0] == 6


def test_huge_ints_in_keywords_are_one_line(small_data):
    for key in ("batch_size", "num_workers", "seed", "prefetch_batches", "image_size"):
        with pytest.raises((ValueError, TypeError)) as raised:
            flowloader.DataLoader(small_data, **{key: 2**70})
        assert key in one_line(raised)
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(small_data, rank=2**70, world_size=2)
    one_line(raised)


def test_a_400_digit_int_in_a_keyword_is_cut_once(small_data):
    # The value was cut to 200 characters, and that cut word again by OneLine: "got
    # 1000...0... (203 characters) (401 characters)".
    for key in ("batch_size", "seed", "epochs"):
        with pytest.raises(ValueError) as raised:
            flowloader.DataLoader(small_data, **{key: 10**400})
        message = one_line(raised)
        assert message.endswith("0... (401 characters)") and message.count("characters)") \
            == 1, message


def test_torchs_own_keywords_say_what_does_their_work(small_data):
    # sampler= was read as a typo: "(did you mean 'epoch_samples'?)".
    for key, words in (("sampler", "flowloader's own sampler picks the indices"),
                       ("collate_fn", "batches are collated natively"),
                       ("worker_init_fn", "workers are threads of this process"),
                       ("prefetch_factor", "use prefetch_batches")):
        with pytest.raises(TypeError) as raised:
            flowloader.DataLoader(small_data, **{key: None})
        message = one_line(raised)
        assert message.startswith(f"DataLoader() got an unexpected keyword argument '{key}': "
                                  f"{words}") and "did you mean" not in message, message


def test_device_takes_a_torch_device_and_words_are_not_ints(small_data):
    # device (default "auto") was read as a count like num_workers: torch.device("cpu")
    # was "device must be an int", and so was any wrong device or s3_addressing.
    import torch
    with flowloader.DataLoader(small_data, batch_size=6, image_size=16,
                               device=torch.device("cpu")) as made:
        assert next(iter(made))[0].device.type == "cpu"
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(small_data, device=torch.device("cuda", 1))
    assert "cuda:1" in one_line(raised) and "must be an int" not in str(raised.value)
    for key, value in (("device", 5), ("s3_addressing", 3)):
        with pytest.raises(TypeError) as raised:
            flowloader.DataLoader(small_data, **{key: value})
        assert f"{key} must be a str, got int 5" in one_line(raised) or \
            f"{key} must be a str, got int 3" in str(raised.value)


def test_a_torchvision_compose_is_refused_in_one_line(small_data):
    torchvision = pytest.importorskip("torchvision")
    tv = torchvision.transforms
    compose = tv.Compose([tv.RandomResizedCrop(224), tv.RandomHorizontalFlip(), tv.ToTensor(),
                          tv.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    for transform in (compose, [compose], {"a": compose}):
        with pytest.raises(TypeError) as raised:
            flowloader.DataLoader(small_data, transform=transform)
        message = one_line(raised)
        assert "torchvision.transforms.transforms.Compose, torchvision's" in message
        assert "flowloader.transforms" in message
    with pytest.raises(TypeError) as raised:
        flowloader.DataLoader(small_data, batch_ops=compose)
    assert "batch_ops is torchvision.transforms.transforms.Compose" in one_line(raised)
    with pytest.raises(TypeError) as raised:
        flowloader.DataLoader(small_data, batch_ops=[compose])
    assert "an item of batch_ops is torchvision" in one_line(raised)
    with pytest.raises(TypeError) as raised:
        flowloader.DataLoader(small_data, stages=[{"type": "read"}, {"type": "decode"},
                                                  {"type": "transforms", "ops": compose}])
    assert "a stage's ops is torchvision" in one_line(raised)


def test_values_in_messages_are_cut_to_200_characters(small_data):
    huge = "y" * 10**6
    for keywords in ({"on_error": huge}, {"layout": huge}, {"transform": huge},
                     {"max_errors": huge}, {"data": small_data + huge}):
        with pytest.raises((ValueError, TypeError)) as raised:
            flowloader.DataLoader(**({"data": small_data} | keywords))
        message = one_line(raised)
        assert "y" * 201 not in message, message[:400]
    with pytest.raises(TypeError) as raised:
        flowloader.DataLoader(small_data, batch_ops=[{"type": "x", "options": {huge}}])
    assert "y" * 201 not in one_line(raised)
    with pytest.raises(TypeError) as raised:
        flowloader.DataLoader(small_data, transform=[T.Resize(16), huge])
    assert "y" * 201 not in str(raised.value)


def test_a_compose_in_a_list_of_transforms_still_works(small_data):
    # The refusals above leave flowloader's own transforms alone.
    with flowloader.DataLoader(small_data, batch_size=4,
                               transform=T.Compose([T.RandomResizedCrop(16), T.ToTensor()])) as l:
        assert next(iter(l))[0].shape == (4, 3, 16, 16)


def test_random_choice_without_transforms_or_with_wrong_weights_is_one_line(small_data):
    # torchvision 0.14 makes both and fails at the call with an IndexError / ValueError
    # from Python's random module: so does flowloader, and the loader refuses them (every
    # sample would fail), each in one line.
    img = Image.new("RGB", (8, 6))
    empty = T.RandomChoice([])
    with pytest.raises(IndexError) as raised:
        empty(img)
    assert "empty sequence" in one_line(raised)
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(small_data, transform=T.Compose([empty]))
    assert "at least one transform" in one_line(raised)
    unweighted = T.RandomChoice([T.RandomHorizontalFlip(), T.RandomVerticalFlip()], p=[1.0])
    for call in (lambda: unweighted(img),
                 lambda: flowloader.DataLoader(small_data, transform=T.Compose([unweighted]))):
        with pytest.raises(ValueError) as raised:
            call()
        assert "p has 1 weights for 2 transforms" in one_line(raised)


@pytest.mark.parametrize("make", [
    lambda: T.RandomHorizontalFlip(p="a"), lambda: T.RandomGrayscale(p=None),
    lambda: T.RandomVerticalFlip(p=[0.5]), lambda: T.RandomInvert(p=b"1"),
    lambda: T.RandomCrop(10, padding=[1, 2, 3]), lambda: T.RandomResizedCrop(10, scale=(0.1,)),
], ids=["flip_p_str", "grayscale_p_none", "vflip_p_list", "invert_p_bytes",
        "crop_padding_of_3", "rrc_scale_of_1"])
def test_an_eager_call_checks_its_arguments_before_drawing(make):
    # Called on an image, the op's own check runs before the draw reads an argument:
    # was struct.error ("required argument is not a float") for p, IndexError for the
    # padding and scale lists.
    from PIL import Image
    with pytest.raises((ValueError, TypeError)) as raised:
        make()(Image.new("RGB", (64, 48)))
    one_line(raised)


@pytest.mark.parametrize("make", [
    lambda: T.Compose(["x" * 10**6]), lambda: T.RandomApply([list(range(10**5))]),
    lambda: T.Resize(10, interpolation="i" * 10**6), lambda: T.AutoAugment("p" * 10**6),
    lambda: T.ConvertImageDtype("d" * 10**6), lambda: T.RandomRotation(10, center=[1] * 10**5),
    lambda: T.Pad(1, fill="f" * 10**6),
], ids=["compose_str", "random_apply_list", "interpolation", "policy", "dtype", "center",
        "pad_fill"])
def test_a_huge_value_in_a_transforms_refusal_is_cut(make):
    # The value a refusal quotes is cut to 200 characters (was the whole megabyte); the
    # rest is the refusal's own words and where the docs list what is supported. (An
    # unknown policy is a ValueError, as torchvision's.)
    with pytest.raises((TypeError, ValueError)) as raised:
        make()
    message = str(raised.value)
    assert "\n" not in message and len(message) < 450, f"{len(message)}: {message[:300]}"
    assert "characters)" in message


def _bad_eager_calls():
    import torch
    import flowloader.transforms.functional as F
    img = Image.new("RGB", (32, 24))
    t = torch.zeros(3, 24, 32, dtype=torch.uint8)
    return {
        # center= is taken (issue 35); a malformed one is refused.
        "rotate_center": lambda: F.rotate(img, 30, center=[3]),
        "rotate_center_tensor": lambda: F.rotate(t, 30, center=3),
        "affine_center": lambda: F.affine(img, 10, [0, 0], 1.0, [0.0], center=[1, 1, 1]),
        "random_rotation_center": lambda: T.RandomRotation(10, center=(3, "x"))(img),
        "random_affine_interpolation": lambda: T.RandomAffine(9, interpolation=1)(img),
        "resize_interpolation": lambda: T.Resize(10, interpolation="lanczos2")(img),
        "auto_augment_policy": lambda: T.AutoAugment("imagenet2")(img),
        "convert_dtype": lambda: T.ConvertImageDtype(torch.int32)(t),
        "compose_of_a_str": lambda: T.Compose(["x"])(img),
        "elastic_interpolation": lambda: T.ElasticTransform(
            interpolation=T.InterpolationMode.BICUBIC)(img),
        "scale_jitter_antialias": lambda: T.ScaleJitter((32, 32), antialias=False)(img),
        "expanded_tensor": lambda: F.invert(torch.zeros(3, 1, 1).expand(3, 10**5, 10**5)),
        "numpy_float": lambda: F.hflip(np.zeros((4, 4, 3), np.float32)),
    }


@pytest.mark.parametrize("name", sorted(_bad_eager_calls()))
def test_an_eager_refusal_is_one_short_line(name):
    # F.rotate(img, 30, center=...) gave one line of 809 characters: every refusal listed
    # all supported classes. A refusal names the problem, its value and the docs.
    with pytest.raises((TypeError, ValueError)) as raised:
        _bad_eager_calls()[name]()
    message = one_line(raised)
    assert len(message) <= 300, f"{len(message)}: {message}"


def test_hold_limit_and_a_huge_keyword_are_one_line():
    # hold_limit(2**70) and hold_limit("3") were pybind11 signature dumps (4 lines); an
    # unknown keyword of 1 MB was quoted whole.
    with pytest.raises(ValueError) as raised:
        flowloader.hold_limit(2**70)
    assert "hold_limit's prefetch_batches must be in [1, 2147483647]" in one_line(raised)
    with pytest.raises(TypeError) as raised:
        flowloader.hold_limit("3")
    assert "must be an int, got str '3'" in one_line(raised)
    assert flowloader.hold_limit(3) == 2
    with pytest.raises(TypeError) as raised:
        flowloader.DataLoader("/nonexistent", **{"k" * 10**6: 1})
    assert "unexpected keyword argument 'kkkk" in one_line(raised)


@pytest.mark.parametrize("inner", ["RandomHorizontalFlip()", "ColorJitter(0.4)",
                                   "Compose([TV.RandomCrop(8)] * 300)"])
def test_a_torchvision_class_inside_a_compose_says_which_class_to_use(inner):
    import torchvision.transforms as TV
    with pytest.raises(TypeError) as raised:
        T.Compose([eval("TV." + inner), T.ToTensor()])
    message = one_line(raised)
    assert "torchvision's: build it with flowloader.transforms" in message
    assert len(message) < 300, message


@pytest.mark.parametrize("flag", ["--data=/" + "x" * 5000, "--batch_size=" + "9" * 1000,
                                  "--" + "y" * 5000 + "=1"],
                         ids=["data_path", "batch_size", "flag_name"])
def test_the_command_lines_refusal_cuts_what_it_quotes(flag):
    # `flowloader run` echoed a flag's text whole: a 5000-character path gave a line of
    # 10054 characters. Its refusals are one line with each quoted value cut.
    import subprocess
    from conftest import FLOWLOADER_BIN
    run = subprocess.run([FLOWLOADER_BIN, "run", flag, "--noprogress", "--metrics_address="],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr[-500:]
    errors = [line for line in run.stderr.splitlines()
              if line.startswith("flowloader: ") and not line.startswith(("flowloader: I ",
                                                                            "flowloader: W "))]
    assert len(errors) == 1, errors
    assert len(errors[0]) < 1100 and "characters)" in errors[0], errors[0][:300]


@pytest.mark.parametrize("make", [lambda: T.RandomResizedCrop(8), lambda: T.RandomCrop(4),
                                  lambda: T.RandomRotation(10, expand=True)],
                         ids=["random_resized_crop", "random_crop", "rotation"])
def test_a_draw_on_a_list_of_images_is_a_type_error(make):
    # A list (FiveCrop's crops, or any list) reached the draw as a 0x0 image: a
    # ZeroDivisionError from RandomResizedCrop's ratio.
    with pytest.raises(TypeError) as raised:
        make()([1, 2, 3])
    assert "takes one image, got a list of 3" in one_line(raised)


# Round 6: functional calls with a value torchvision refuses (a str, a float where it takes
# an int, a list of the wrong length, an image of the wrong kind), each taken before or
# refused as another exception type (ZeroDivisionError, AttributeError). Refused in one line.
FUNCTIONAL_REFUSED = [
    "F.affine(x, '0', [0, 0], 1, [0])", "F.affine(x, 0, [0, 0], 0, [0])",
    "F.affine(x, 0, [0, 0], -1, [0])", "F.affine(x, 0, [0, 0], 1, [0, 0, 0])",
    "F.affine(x, 0, [0], 1, [0])", "F.rotate(x, '30')", "F.crop(x, '0', 0, 5, 5)",
    "F.gaussian_blur(x, [3])", "F.gaussian_blur(x, [3.0, 3])", "F.pad(x, 1.0)",
    "F.solarize(x, '1')", "F.posterize(x, '4')", "F.resized_crop(x, 0, 0, 10, 10, (5, 6, 7))",
    "F.ten_crop(x, (5, 6, 7))", "F.five_crop(x, [4, 5, 6])", "F.to_pil_image(x)",
    "F.convert_image_dtype(x, torch.float16)",
]


@pytest.mark.parametrize("expr", FUNCTIONAL_REFUSED)
def test_a_functional_call_torchvision_refuses_is_refused_in_one_line(expr):
    import torch
    import torchvision.transforms.functional as TVF
    import flowloader.transforms.functional as FF
    x = Image.fromarray(np.random.default_rng(3).integers(0, 256, (30, 41, 3), np.uint8))
    with pytest.raises(Exception):
        eval(expr, {"F": TVF, "x": x, "torch": torch})  # noqa: S307 -- the test's own.
    with pytest.raises((ValueError, TypeError)) as raised:
        eval(expr, {"F": FF, "x": x, "torch": torch})  # noqa: S307
    assert len(one_line(raised)) <= 300


def test_round_6_values_in_messages_are_cut():
    # Each quoted a 1 MB string or a 309-digit number whole.
    import torch
    import flowloader.transforms.functional as FF
    img = Image.new("RGB", (41, 30))
    for make in (lambda: T.AugMix(alpha="a" * 10**6),
                 lambda: FF.erase(torch.zeros(3, 8, 8), "i" * 10**6, 0, 2, 2, 0),
                 lambda: FF.five_crop(img, 1e308), lambda: T.TenCrop(1e308)(img),
                 lambda: FF.crop(img, 1e308, 0, 5, 5),
                 lambda: FF.resized_crop(img, 0, -1e308, 5, 5, 8),
                 lambda: FF.convert_image_dtype(torch.zeros(3, 4, 4), "d" * 10**6)):
        with pytest.raises((ValueError, TypeError)) as raised:
            make()
        assert len(one_line(raised)) <= 450


def test_a_policy_on_a_float_tensor_is_refused_in_a_short_line():
    # The list of every op float tensors take made this line ~580 characters long.
    import torch
    for policy in (T.AutoAugment(), T.RandAugment(), T.TrivialAugmentWide(), T.AugMix()):
        with pytest.raises(TypeError) as raised:
            policy(torch.rand(3, 8, 8))
        message = one_line(raised)
        assert len(message) <= 300 and "docs/python.md" in message, message


BICUBIC_ON_TENSORS = [
    "T.RandomRotation(10, interpolation=I.BICUBIC)(x)",
    "T.RandomAffine(10, interpolation=I.BICUBIC)(x)",
    "T.RandomPerspective(p=1, interpolation=I.BICUBIC)(x)",
    "F.rotate(x, 10.0, interpolation=I.BICUBIC)",
    "F.affine(x, 10.0, [0, 0], 1.0, [0.0], interpolation=I.BICUBIC)",
    "F.perspective(x, [[0, 0], [40, 0], [40, 29], [0, 29]], [[1, 1], [39, 0], [40, 29], "
    "[0, 29]], interpolation=I.BICUBIC)",
]


@pytest.mark.parametrize("expr", BICUBIC_ON_TENSORS)
def test_bicubic_on_a_tensor_is_refused_as_torchvision_refuses_it(expr):
    # torchvision's tensor rotate, affine and perspective take NEAREST and BILINEAR only;
    # flowloader's uint8 tensors (PIL's pixels) took BICUBIC. A PIL image takes it in both.
    import torch
    import torchvision.transforms as TV
    import torchvision.transforms.functional as TVF
    import flowloader.transforms.functional as FF
    pil = Image.fromarray(np.random.default_rng(3).integers(0, 256, (30, 41, 3), np.uint8))
    tensor = torch.from_numpy(np.array(pil)).permute(2, 0, 1).contiguous()
    for x in (pil, tensor):
        spaces = [{"T": TV, "F": TVF, "I": TV.InterpolationMode, "x": x},
                  {"T": T, "F": FF, "I": T.InterpolationMode, "x": x}]
        if x is pil:
            for space in spaces:
                eval(expr, space)  # noqa: S307 -- the test's own expressions.
            continue
        for space in spaces:
            with pytest.raises(ValueError, match="Interpolation mode 'bicubic' is unsupported "
                                                 "with Tensor input") as raised:
                eval(expr, space)  # noqa: S307
            one_line(raised)


@pytest.mark.parametrize("policy", ["TrivialAugmentWide", "RandAugment"])
def test_a_policy_with_bicubic_on_a_tensor_fails_on_the_draws_torchvisions_fails_on(policy):
    # Only a geometric sub-op (shear, translate, rotate) takes the interpolation.
    import torch
    import torchvision.transforms as TV
    x = torch.from_numpy(np.random.default_rng(5).integers(0, 256, (3, 30, 41), np.uint8))
    outcomes = []
    for module in (TV, T):
        failed = []
        for seed in range(40):
            torch.manual_seed(seed)
            try:
                getattr(module, policy)(interpolation=module.InterpolationMode.BICUBIC)(x)
                failed.append(False)
            except ValueError as e:
                assert "Interpolation mode 'bicubic' is unsupported" in str(e)
                failed.append(True)
        outcomes.append(failed)
    assert outcomes[0] == outcomes[1]
    assert any(outcomes[0]) and not all(outcomes[0])


# What torchvision refuses on one kind of image only: its tensor pad (reflect wider than
# the image, symmetric past it, a colour fill), tensor solarize (a threshold over 255),
# tensor resize (PIL's BOX, HAMMING, LANCZOS), tensor crop (a float box); on both kinds
# a blur kernel whose half is not below the image's side; on PIL a float number of bits.
# flowloader's uint8 tensors take PIL's pixels and took all of these.
KIND_REFUSED = [
    "T.Pad(100, padding_mode='reflect')(u8)", "T.Pad(31, padding_mode='symmetric')(u8)",
    "T.Pad(1, fill=[1, 2, 3])(u8)", "T.RandomCrop(5, padding=100, padding_mode='reflect')(u8)",
    "T.RandomCrop(100, pad_if_needed=True, padding_mode='reflect')(u8)",
    "F.pad(u8, 50, padding_mode='reflect')", "F.pad(u8, [1, 2], fill=(1, 2, 3))",
    "F.solarize(u8, 300)", "T.RandomSolarize(256, p=1)(u8)",
    "F.resize(u8, 5, interpolation=I.BOX)", "T.Resize(5, interpolation=I.LANCZOS)(u8)",
    "T.RandomResizedCrop(5, interpolation=I.HAMMING)(u8)", "F.crop(u8, 0.5, 0, 5, 5)",
    "T.GaussianBlur(101)(u8)", "T.GaussianBlur(101)(pil)", "F.gaussian_blur(pil, [99, 99])",
    "T.RandomPosterize(4.0, p=1)(pil)", "F.posterize(pil, 3.0)",
]
# The same values on the other kind: taken by both.
KIND_TAKEN = [
    "T.Pad(100, padding_mode='reflect')(pil)", "T.Pad(1, fill=[1, 2, 3])(pil)",
    "T.Pad(30, padding_mode='symmetric')(u8)", "T.Pad(29, padding_mode='reflect')(u8)",
    "F.solarize(pil, 300)", "F.solarize(u8, 255)", "T.Resize(5, interpolation=I.LANCZOS)(pil)",
    "F.crop(pil, 0.5, 0, 5, 5)", "F.posterize(u8, 3.0)", "T.GaussianBlur(59)(pil)",
]


def _kind_space(module_t, module_f):
    import torch
    pil = Image.fromarray(np.random.default_rng(3).integers(0, 256, (30, 41, 3), np.uint8))
    u8 = torch.from_numpy(np.array(pil)).permute(2, 0, 1).contiguous()
    return {"T": module_t, "F": module_f, "I": module_t.InterpolationMode, "pil": pil,
            "u8": u8}


@pytest.mark.parametrize("expr", KIND_REFUSED)
def test_what_torchvision_refuses_on_one_kind_of_image_is_refused_there(expr):
    import torch
    import torchvision.transforms as TV
    import torchvision.transforms.functional as TVF
    import flowloader.transforms.functional as FF
    torch.manual_seed(0)
    with pytest.raises(Exception):
        eval(expr, _kind_space(TV, TVF))  # noqa: S307 -- the test's own expressions.
    torch.manual_seed(0)
    with pytest.raises((ValueError, TypeError)) as raised:
        eval(expr, _kind_space(T, FF))  # noqa: S307
    assert len(one_line(raised)) <= 300


@pytest.mark.parametrize("expr", KIND_TAKEN)
def test_the_same_values_on_the_other_kind_are_taken_by_both(expr):
    import torch
    import torchvision.transforms as TV
    import torchvision.transforms.functional as TVF
    import flowloader.transforms.functional as FF
    for module_t, module_f in ((TV, TVF), (T, FF)):
        torch.manual_seed(0)
        eval(expr, _kind_space(module_t, module_f))  # noqa: S307


# -- round 7 ------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["data", "spec", "annotations"])
def test_a_path_that_is_not_utf8_is_one_line_naming_its_bytes(small_data, key):
    # A file name that is not UTF-8 comes from os.listdir / os.fsdecode as a str with
    # surrogates: it was pybind11's signature dump (the str would not convert), and a
    # message quoting its bytes was a ValueError with an empty message.
    missing = "/nonexistent/caf\udce9"
    kwargs = {"data": small_data, key: missing} if key != "data" else {"data": missing}
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(batch_size=2, image_size=16, **kwargs)
    assert "/nonexistent/caf\\xe9" in one_line(raised)


@pytest.mark.parametrize("as_bytes", [False, True], ids=["surrogates", "bytes"])
def test_data_under_a_name_that_is_not_utf8_is_read_and_keyed(small_data, tmp_path, as_bytes):
    import os
    import shutil
    root = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    classes = sorted(c for c in os.listdir(small_data) if not c.startswith("."))[:1]
    shutil.copytree(os.path.join(small_data, classes[0]),
                    os.fsdecode(os.path.join(root, os.fsencode(classes[0]) + b"\xff")))
    data = root if as_bytes else os.fsdecode(root)
    loader = flowloader.DataLoader(data, batch_size=4, image_size=16, return_keys=True,
                                   shuffle=False)
    keys = [key for _, _, batch_keys in loader for key in batch_keys]
    assert len(keys) == 12
    # The keys are os.fsdecode's: os.fsencode gives the file's bytes back.
    assert os.path.exists(os.path.join(root, os.fsencode(keys[0])))
    assert loader.__repr__().count("\n") == 0


def test_a_state_dicts_sample_must_follow_its_batch(loader):
    # sample is where the pipeline resumes; batch 5 with sample 2 resumed at sample 2,
    # delivering three batches' samples again without a word.
    state = loader.state_dict() | {"batch": 5, "sample": 2}
    with pytest.raises(ValueError) as raised:
        loader.load_state_dict(state)
    assert "state_dict's sample must be in [5, 30] after batch 5" in one_line(raised)
    with pytest.raises(ValueError) as raised:
        loader.load_state_dict(loader.state_dict() | {"batch": 1, "sample": 7})
    assert "got 7" in one_line(raised)
    loader.load_state_dict(loader.state_dict() | {"batch": 2, "sample": -1})  # Not known.


@pytest.mark.parametrize("value", [None, 3, "img", [1, 2], {}], ids=["none", "int", "str",
                                                                      "list", "dict"])
def test_get_dimensions_of_what_is_no_image_is_torchvisions_type_error(value):
    import flowloader.transforms.functional as F
    import torchvision.transforms.functional as TF
    with pytest.raises(TypeError):
        TF.get_dimensions(value)
    with pytest.raises(TypeError) as raised:  # Was AttributeError: no attribute 'shape'.
        F.get_dimensions(value)
    one_line(raised)


@pytest.mark.parametrize("change,error,words", [
    ({"extra": 1}, ValueError, "state_dict has an unknown key 'extra'"),
    ({"version": True}, ValueError, "state version True is not 1"),
    ({"version": 1.0}, ValueError, "state version 1.0 is not 1"),
    ({"world_size": True}, TypeError, "state_dict's world_size must be an int, got bool"),
    ({"shuffle": 1}, TypeError, "state_dict's shuffle must be a bool, got int 1"),
    ({"seed": 0.0}, TypeError, "state_dict's seed must be an int, got float 0.0"),
    ({"epoch": np.bool_(True)}, TypeError, "state_dict's epoch must be an int, got bool"),
], ids=["extra_key", "version_true", "version_float", "world_size_bool", "shuffle_int",
        "seed_float", "epoch_numpy_bool"])
def test_a_forged_state_dicts_types_and_keys_are_refused(loader, change, error, words):
    # Each compared equal to the loader's own value (True == 1, 1.0 == 1) or was ignored
    # (an unknown key), and was taken.
    with pytest.raises(error) as raised:
        loader.load_state_dict(loader.state_dict() | change)
    assert words in one_line(raised)


def test_a_state_dict_with_numpy_ints_and_bools_is_taken(loader):
    # A round trip through numpy (or torch.save of numpy values) keeps the meaning.
    state = {k: (np.bool_(v) if isinstance(v, bool) else np.int64(v))
             for k, v in loader.state_dict().items()}
    loader.load_state_dict(state)
    assert loader.state_dict()["epoch"] == int(state["epoch"])


def test_a_loader_is_neither_copied_nor_pickled(small_data):
    import copy
    import pickle
    with flowloader.DataLoader(small_data, batch_size=6, image_size=16) as made:
        for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
            # A shallow copy shared the pipeline: dropping it closed the original's.
            with pytest.raises(TypeError) as raised:
                attempt(made)
            assert "cannot be copied or pickled" in one_line(raised)
        assert sum(images.shape[0] for images, _ in made) == 36  # Still open.
    with pytest.raises(ValueError, match="the DataLoader is closed"):
        made.load_state_dict({})  # Was "state version None is not 1".


@pytest.mark.parametrize("key", ["batch_size", "num_workers", "seed", "epochs", "read_ahead",
                                 "world_size"])
def test_a_numpy_bool_is_no_count_in_a_keyword(small_data, key):
    # numpy's bool has __index__: np.bool_(True) was taken as a count of 1.
    with pytest.raises(TypeError) as raised:
        flowloader.DataLoader(small_data, image_size=16, **{key: np.bool_(True)})
    assert f"{key} must be an int, got bool True" in one_line(raised)
    flowloader.DataLoader(small_data, image_size=16, **{key: np.int64(1)}).close()
