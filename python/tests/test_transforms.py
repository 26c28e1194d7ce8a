"""flowloader.transforms: each torchvision class gives the same batch bytes as a YAML spec
with the op it maps to (the spec written by hand here, so the mapping is checked, not
re-derived), unsupported classes and arguments raise TypeError, several views."""

import pytest
import torch

import flowloader
import flowloader.transforms as T

IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
NORM_YAML = "normalize: {mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}"

# (id, the transforms after a CenterCrop(32), the spec's ops after center_crop: {size: 32}).
# The YAML leaves out what torchvision's defaults give, so a wrong default fails too.
CASES = [
    ("RandomResizedCrop", [T.RandomResizedCrop(24, scale=(0.4, 1.0),
                                               interpolation=T.InterpolationMode.BICUBIC)],
     ["random_resized_crop: {size: 24, scale: [0.4, 1.0], interpolation: bicubic}"]),
    ("RandomResizedCrop_defaults", [T.RandomResizedCrop(24)], ["random_resized_crop: {size: 24}"]),
    ("RandomResizedCrop_PIL_constant", [T.RandomResizedCrop(24, interpolation=3)],
     ["random_resized_crop: {size: 24, interpolation: bicubic}"]),  # PIL's Image.BICUBIC.
    ("Resize", [T.Resize([20, 24])], ["resize: {size: [20, 24]}"]),
    ("Resize_nearest", [T.Resize(24, interpolation=T.InterpolationMode.NEAREST),
                        T.CenterCrop(24)],
     ["resize: {size: 24, interpolation: nearest}", "center_crop: {size: 24}"]),
    ("RandomCrop", [T.RandomCrop(28, padding=4, padding_mode="reflect")],
     ["random_crop: {size: 28, padding: 4, padding_mode: reflect}"]),
    ("RandomHorizontalFlip", [T.RandomHorizontalFlip()], ["random_horizontal_flip: {p: 0.5}"]),
    ("Pad", [T.Pad([1, 2, 3, 4], fill=9, padding_mode="reflect"), T.CenterCrop(30)],
     ["pad: {padding: [1, 2, 3, 4], fill: 9, padding_mode: reflect}", "center_crop: {size: 30}"]),
    ("Pad_constant", [T.Pad(2, fill=(10, 20, 30)), T.CenterCrop(34)],
     ["pad: {padding: 2, fill: [10, 20, 30]}", "center_crop: {size: 34}"]),
    ("RandomVerticalFlip", [T.RandomVerticalFlip()], ["random_vertical_flip: {p: 0.5}"]),
    ("ColorJitter", [T.ColorJitter(0.4, 0.4, 0.2, 0.1)],
     ["color_jitter: {brightness: 0.4, contrast: 0.4, saturation: 0.2, hue: 0.1}"]),
    ("ColorJitter_ranges", [T.ColorJitter(brightness=(0.5, 1.5), hue=(-0.2, 0.1))],
     ["color_jitter: {brightness: [0.5, 1.5], hue: [-0.2, 0.1]}"]),
    ("Grayscale", [T.Grayscale(num_output_channels=3)], ["grayscale: {}"]),
    ("Grayscale_3_broadcast", [T.Grayscale(1), T.ToTensor(), T.Normalize(*IMAGENET)],
     ["grayscale: {num_output_channels: 1}", NORM_YAML]),
    ("RandomGrayscale", [T.RandomGrayscale()], ["random_grayscale: {p: 0.1}"]),
    ("GaussianBlur", [T.GaussianBlur(5)], ["gaussian_blur: {kernel_size: 5, sigma: [0.1, 2.0]}"]),
    ("PILGaussianBlur", [T.PILGaussianBlur(1.0)],
     ["pil_gaussian_blur: {radius: [0.1, 2.0], p: 1.0}"]),
    ("PILGaussianBlur_in_RandomApply", [T.RandomApply([T.PILGaussianBlur(1.0, 0.5, 1.5)], p=0.5)],
     ["pil_gaussian_blur: {radius: [0.5, 1.5], p: 0.5}"]),
    ("RandomSolarize", [T.RandomSolarize(128)], ["random_solarize: {threshold: 128, p: 0.5}"]),
    ("RandomPosterize", [T.RandomPosterize(3)], ["random_posterize: {bits: 3, p: 0.5}"]),
    ("RandomEqualize", [T.RandomEqualize()], ["random_equalize: {p: 0.5}"]),
    ("RandomAutocontrast", [T.RandomAutocontrast()], ["random_autocontrast: {p: 0.5}"]),
    ("RandomAdjustSharpness", [T.RandomAdjustSharpness(3)],
     ["random_adjust_sharpness: {sharpness_factor: 3, p: 0.5}"]),
    ("RandomInvert", [T.RandomInvert()], ["random_invert: {p: 0.5}"]),
    ("RandomAffine", [T.RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=5)],
     ["random_affine: {degrees: 15, translate: [0.1, 0.1], scale: [0.9, 1.1], shear: 5, "
      "interpolation: nearest, fill: 0}"]),
    ("RandomRotation", [T.RandomRotation(20, interpolation=T.InterpolationMode.BILINEAR)],
     ["random_rotation: {degrees: 20, interpolation: bilinear}"]),
    ("RandomPerspective", [T.RandomPerspective(0.3, p=0.7, fill=5)],
     ["random_perspective: {distortion_scale: 0.3, p: 0.7, fill: 5}"]),
    ("TrivialAugmentWide", [T.TrivialAugmentWide()], ["trivial_augment_wide: {}"]),
    ("RandAugment", [T.RandAugment()],
     ["rand_augment: {num_ops: 2, magnitude: 9, num_magnitude_bins: 31}"]),
    ("AutoAugment", [T.AutoAugment(T.AutoAugmentPolicy.IMAGENET)],
     ["auto_augment: {policy: imagenet}"]),
    ("AugMix", [T.AugMix(severity=2, mixture_width=2)],
     ["aug_mix: {severity: 2, mixture_width: 2}"]),
    ("ElasticTransform", [T.ElasticTransform(30.0, [3.0, 2.0], fill=7)],
     ["elastic_transform: {alpha: 30, sigma: [3, 2], fill: 7}"]),
    ("ToTensor_Normalize", [T.ToTensor(), T.Normalize(*IMAGENET)], [NORM_YAML]),
    ("ToTensor_Normalize_tensors", [T.ToTensor(), T.Normalize(torch.tensor(IMAGENET[0]),
                                                              torch.tensor(IMAGENET[1]))],
     ["normalize: {mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225]}"]),
    ("ToTensor_alone", [T.ToTensor()], ["normalize: {mean: 0, std: 1}"]),
    ("PILToTensor_ConvertImageDtype", [T.PILToTensor(), T.ConvertImageDtype(torch.float)],
     ["normalize: {mean: 0, std: 1}"]),
    ("RandomErasing", [T.ToTensor(), T.Normalize(*IMAGENET), T.RandomErasing()],
     [NORM_YAML, "random_erasing: {p: 0.5, scale: [0.02, 0.33], ratio: [0.3, 3.3], value: 0}"]),
    ("RandomErasing_random", [T.ToTensor(), T.Normalize(*IMAGENET),
                              T.RandomErasing(p=1.0, value="random")],
     [NORM_YAML, "random_erasing: {p: 1.0, value: random}"]),
    ("RandomApply", [T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8)],
     ["color_jitter: {brightness: 0.4, contrast: 0.4, saturation: 0.2, hue: 0.1, p: 0.8}"]),
    ("RandomApply_of_Random", [T.RandomApply([T.RandomInvert(p=0.5)], p=0.5)],
     ["random_invert: {p: 0.25}"]),
    ("Compose_nested", [T.Compose([T.RandomHorizontalFlip(), T.Compose([T.RandomInvert()])])],
     ["random_horizontal_flip: {}", "random_invert: {}"]),
    # Ops over sub-lists: the spec writes the sub-ops as the view's own list.
    ("RandomChoice", [T.RandomChoice([T.RandomInvert(1.0), T.RandomSolarize(9, p=1.0),
                                      T.Compose([T.RandomCrop(24), T.Resize(32)])],
                                     p=[1, 2, 1])],
     ["random_choice: {transforms: [{random_invert: {p: 1}}, "
      "{random_solarize: {threshold: 9, p: 1}}, {compose: {transforms: [{random_crop: "
      "{size: 24}}, {resize: {size: 32}}]}}], weights: [1, 2, 1]}"]),
    ("RandomOrder", [T.RandomOrder([T.RandomInvert(), T.ColorJitter(0.4),
                                    T.RandomRotation(30)])],
     ["random_order: {transforms: [random_invert, {color_jitter: {brightness: 0.4}}, "
      "{random_rotation: {degrees: 30}}]}"]),
    ("RandomApply_several", [T.RandomApply([T.RandomVerticalFlip(1.0), T.RandomInvert(1.0)],
                                           p=0.6)],
     ["compose: {transforms: [{random_vertical_flip: {p: 1}}, {random_invert: {p: 1}}], "
      "p: 0.6}"]),
    # Grayscale(1): a one-channel view ([1, H, W] with one mean and std; [H, W, 1] uint8).
    ("Grayscale_1", [T.Grayscale(), T.RandomGrayscale(0.5), T.ToTensor(),
                     T.Normalize([0.5], [0.25])],
     ["grayscale: {num_output_channels: 1}", "random_grayscale: {p: 0.5}",
      "normalize: {mean: 0.5, std: 0.25}"]),
    ("Grayscale_1_uint8", [T.Grayscale(1), T.RandomInvert()],
     ["grayscale: {num_output_channels: 1}", "random_invert: {}"]),
    # FiveCrop / TenCrop: the view is the crops stacked; the ops after them run per crop.
    ("FiveCrop", [T.FiveCrop(16)], ["five_crop: {size: 16}"]),
    ("TenCrop", [T.TenCrop([12, 14], vertical_flip=True),
                 T.Lambda(lambda crops: torch.stack([T.ToTensor()(c) for c in crops])),
                 T.Normalize(*IMAGENET)],
     ["ten_crop: {size: [12, 14], vertical_flip: true}", NORM_YAML]),
    ("TenCrop_random_after", [T.TenCrop(12), T.RandomInvert()],
     ["ten_crop: {size: 12}", "random_invert: {}"]),
]


def _spec(tmp_path, data, ops_yaml, name="spec"):
    """A spec file: read, decode, one transforms item with `ops_yaml` (list of YAML
    items), or several items given as {outputs: [...]: ops_yaml}."""
    items = ops_yaml if isinstance(ops_yaml, dict) else {None: ops_yaml}
    lines = [f"data: {data}", "stages:", "  - type: read", "  - type: decode"]
    for outputs, ops in items.items():
        lines.append("  - type: transforms")
        if outputs is not None:
            lines.append(f"    outputs: [{outputs}]")
        lines.append("    ops:")
        lines += [f"      - {op}" for op in ops]
    path = tmp_path / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _epoch(**kwargs):
    kwargs.setdefault("batch_size", 12)
    kwargs.setdefault("seed", 7)
    with flowloader.DataLoader(**kwargs) as loader:
        batches = []
        for images, labels in loader:
            if isinstance(images, dict):
                batches.append(({k: v.clone() for k, v in images.items()}, labels.clone()))
            else:
                batches.append((images.clone(), labels.clone()))
        stats = loader.stats()
    return batches, stats


def _same(a, b):
    if isinstance(a, dict):
        return list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)
    return a.dtype == b.dtype and torch.equal(a, b)


@pytest.mark.parametrize("transforms,ops_yaml", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_class_gives_the_spec_ops_bytes(small_data, tmp_path, transforms, ops_yaml):
    compose = T.Compose([T.CenterCrop(32)] + transforms)
    ours, _ = _epoch(data=small_data, transform=compose)
    spec = _spec(tmp_path, small_data, ["center_crop: {size: 32}"] + ops_yaml)
    theirs, _ = _epoch(spec=spec)
    assert len(ours) == len(theirs) == 3
    for (a, la), (b, lb) in zip(ours, theirs):
        assert _same(a, b)
        assert torch.equal(la, lb)
    # Not vacuous: the op changes the plain crop's output (the RandomApply of a
    # RandomInvert too), so a dropped op would fail the comparison above.
    plain, _ = _epoch(spec=_spec(tmp_path, small_data, ["center_crop: {size: 32}"], "plain"))
    if not transforms[-1].__class__.__name__ in ("ToTensor", "ConvertImageDtype", "Normalize"):
        assert not all(_same(a, b) for (a, _), (b, _) in zip(ours, plain))


def test_every_class_has_a_case():
    covered = set()

    def walk(t):
        covered.add(type(t).__name__)
        for inner in getattr(t, "transforms", []):
            walk(inner)
    for _, transforms, _ in CASES:
        for t in transforms:
            walk(t)
    exported = {n for n in T.__all__ if n not in ("InterpolationMode", "AutoAugmentPolicy")}
    # Compose and Lambda have tests of their own below; the eager-only classes are
    # refused by the loader (below) and tested in test_eager.py; the detection ops move
    # targets and are tested with them (test_detection.py, detection_ops_parity_test);
    # the batch ops (Mosaic, SimpleCopyPaste) in test_multi_sample.py.
    detection = {n for n in exported if issubclass(getattr(T, n), (T._DetectionOp, T._BatchOp))}
    assert exported - covered - {"Compose", "Lambda"} - set(T._EAGER_ONLY) - detection == set()


def test_every_detection_class_is_a_native_op():
    detection = [getattr(T, n) for n in T.__all__
                 if isinstance(getattr(T, n), type) and issubclass(getattr(T, n), T._DetectionOp)]
    assert len(detection) == 7
    made = {"FixedSizeCrop": T.FixedSizeCrop(64), "ScaleJitter": T.ScaleJitter((64, 64)),
            "RandomShortestSize": T.RandomShortestSize([48, 64], 96)}
    for cls in detection:
        if cls is T.SanitizeBoundingBoxes:  # A stage after the list, not an op in it.
            continue
        op = made.get(cls.__name__) or cls()
        # The native parser; a fixed-size crop last, as a batch tensor needs.
        flowloader._flowloader.check_ops(T.Compose([op, T.FixedSizeCrop(64)]).to_ops())
        with pytest.raises(TypeError, match="runs in the loader's op list"):
            op(torch.zeros(3, 8, 8, dtype=torch.uint8))


def test_to_ops_is_the_native_text():
    compose = T.Compose([T.RandomResizedCrop(224, scale=(0.4, 1.0),
                                             interpolation=T.InterpolationMode.BICUBIC),
                         T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(*IMAGENET)])
    assert compose.to_ops() == (
        "random_resized_crop(size=224, scale=[0.4, 1.0], ratio=[0.75, 1.3333333333333333], "
        "interpolation=bicubic); random_horizontal_flip(p=0.5); "
        "normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225], inplace=false)")
    flowloader._flowloader.check_ops(compose.to_ops())  # The stage's own parser accepts it.


class LinearTransformation:  # A torchvision class flowloader does not have (by its name).
    def __init__(self, matrix):
        self.matrix = matrix


@pytest.mark.parametrize("make,names", [
    (lambda: T.Compose([T.CenterCrop(32), LinearTransformation(24)]), "LinearTransformation"),
    (lambda: T.RandomApply([LinearTransformation(24)]), "LinearTransformation"),
    (lambda: T.RandomRotation(9, interpolation=T.InterpolationMode.LANCZOS), "lanczos"),
    (lambda: T.RandomAffine(9, interpolation=1), "interpolation=1"),  # PIL's LANCZOS.
    (lambda: T.Compose([T.RandomChoice([T.ToTensor()])]).to_ops(), "inside RandomChoice"),
    (lambda: T.Compose([T.PILToTensor(), T.ConvertImageDtype(torch.uint8)]).to_ops(),
     "ConvertImageDtype(torch.uint8) in the loader"),
    (lambda: T.Compose([T.CenterCrop(32), T.PILToTensor()]).to_ops(), "PILToTensor"),
    (lambda: T.Compose([T.CenterCrop(32), T.ToTensor(), T.RandomErasing(),
                        T.Normalize(*IMAGENET)]).to_ops(), "between ToTensor and Normalize"),
])
def test_unsupported_class_or_argument_is_a_type_error(make, names):
    with pytest.raises(TypeError) as e:
        make()
    assert names in str(e.value)
    assert "docs/python.md" in str(e.value) and "AugMix, AutoAugment" not in str(e.value)


def test_random_apply_of_several_is_the_compose_op():
    several = T.RandomApply([T.ColorJitter(0.4), T.RandomGrayscale()], p=0.8)
    assert T.Compose([several]).to_ops() == (
        "compose(transforms=[color_jitter(brightness=0.4, contrast=0, saturation=0, hue=0); "
        "random_grayscale(p=0.1)], p=0.8)")


def test_one_channel_views_are_torchvisions_shapes(small_data):
    """Grayscale(1) in the loader: [B, 1, H, W] float with one mean and std, [B, 3, H, W]
    with three (torch broadcasts), uint8 [B, H, W, 1] without ToTensor; the values are
    torchvision's L image's, normalized."""
    one = T.Compose([T.CenterCrop(32), T.Grayscale(), T.ToTensor(), T.Normalize([0.5], [0.25])])
    three = T.Compose([T.CenterCrop(32), T.Grayscale(), T.ToTensor(), T.Normalize(*IMAGENET)])
    raw = T.Compose([T.CenterCrop(32), T.Grayscale()])
    (a, _), = _epoch(data=small_data, transform=one, batch_size=40)[0][:1]
    (b, _), = _epoch(data=small_data, transform=three, batch_size=40)[0][:1]
    (c, _), = _epoch(data=small_data, transform=raw, batch_size=40)[0][:1]
    assert a.shape[1:] == (1, 32, 32) and a.dtype == torch.float32
    assert b.shape[1:] == (3, 32, 32)
    assert c.shape[1:] == (32, 32, 1) and c.dtype == torch.uint8
    gray = c.permute(0, 3, 1, 2).float() / 255
    assert torch.allclose(a, (gray - 0.5) / 0.25, atol=1e-5)
    mean = torch.tensor(IMAGENET[0]).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET[1]).view(1, 3, 1, 1)
    assert torch.allclose(b, (gray - mean) / std, atol=1e-5)
    with pytest.raises(ValueError, match="num_output_channels=1 must apply to every sample"):
        flowloader.DataLoader(small_data, transform=T.Compose([
            T.CenterCrop(8), T.RandomApply([T.Grayscale()], p=0.5)]))
    with pytest.raises(ValueError, match="a sub-op cannot"):
        flowloader.DataLoader(small_data, transform=T.Compose([
            T.CenterCrop(8), T.RandomChoice([T.Grayscale(), T.RandomInvert()])]))


def test_eager_only_classes_are_a_type_error_in_the_loader():
    with pytest.raises(TypeError, match="runs when called on an image"):
        T.Compose([T.CenterCrop(8), T.ToPILImage()]).to_ops()


def _stack(convert):
    return T.Lambda(lambda crops: torch.stack([convert(c) for c in crops]))


def test_a_lambda_stacking_the_crops_is_the_views_stack():
    """torchvision's FiveCrop recipe: the Lambda that stacks ToTensor's (PILToTensor's)
    crops is the loader's stack; torchvision's own ToTensor inside it too."""
    import torchvision.transforms as TV
    for convert in (T.ToTensor(), TV.ToTensor()):
        ops = T.Compose([T.FiveCrop(8), _stack(convert), T.Normalize(*IMAGENET)]).to_ops()
        assert ops == ("five_crop(size=8); normalize(mean=[0.485, 0.456, 0.406], "
                       "std=[0.229, 0.224, 0.225], inplace=false)")
    ops = T.Compose([T.TenCrop(8, vertical_flip=True), _stack(TV.PILToTensor()),
                     T.ConvertImageDtype(torch.float)]).to_ops()
    assert ops == "ten_crop(size=8, vertical_flip=true); normalize(mean=0, std=1)"
    flowloader._flowloader.check_ops(ops)


@pytest.mark.parametrize("lam,why", [
    (T.Lambda(lambda crops: crops[0]), "must stack the crops as tensors"),
    (T.Lambda(lambda crops: torch.stack([T.ToTensor()(c) for c in crops[:4]])),
     "must stack the crops"),
    (T.Lambda(lambda crops: 1 / 0), "it raised ZeroDivisionError"),
    (T.Lambda(lambda img, rng: img), "must stack the crops"),
], ids=["first_crop", "four_crops", "raises", "takes_rng"])
def test_another_lambda_after_the_crops_is_a_type_error(lam, why):
    with pytest.raises(TypeError, match=why) as e:
        T.Compose([T.FiveCrop(8), lam]).to_ops()
    assert "after FiveCrop" in str(e.value) and "\n" not in str(e.value)


def test_a_non_transform_view_is_a_type_error(small_data):
    with pytest.raises(TypeError, match="LinearTransformation.*supported"):
        flowloader.DataLoader(small_data, transform=[T.Compose([T.CenterCrop(8)]),
                                                     LinearTransformation(3)])


def test_out_of_range_value_is_the_parsers_value_error(small_data):
    with pytest.raises(ValueError, match="hue"):
        flowloader.DataLoader(small_data, transform=T.Compose([T.CenterCrop(8),
                                                               T.ColorJitter(hue=0.7)]))


def test_builtin_keywords_conflict_with_a_compose(small_data):
    with pytest.raises(ValueError, match="image_size"):
        flowloader.DataLoader(small_data, transform=T.Compose([T.CenterCrop(8)]), image_size=64)


def test_calling_on_a_non_image_is_a_type_error():
    with pytest.raises(TypeError, match="cannot transform a builtins.object"):
        T.CenterCrop(8)(object())


GLOBAL = T.Compose([T.RandomResizedCrop(24, scale=(0.4, 1.0)), T.RandomHorizontalFlip(),
                    T.ToTensor(), T.Normalize(*IMAGENET)])
LOCAL = T.Compose([T.RandomResizedCrop(12, scale=(0.05, 0.4)), T.RandomGrayscale(0.2)])
GLOBAL_YAML = ["random_resized_crop: {size: 24, scale: [0.4, 1.0]}",
               "random_horizontal_flip: {}", NORM_YAML]
LOCAL_YAML = ["random_resized_crop: {size: 12, scale: [0.05, 0.4]}",
              "random_grayscale: {p: 0.2}"]


def test_views_from_a_list(small_data, tmp_path):
    ours, _ = _epoch(data=small_data, transform=[GLOBAL, LOCAL])
    spec = _spec(tmp_path, small_data, {"view0": GLOBAL_YAML, "view1": LOCAL_YAML})
    theirs, _ = _epoch(spec=spec)
    assert list(ours[0][0]) == ["view0", "view1"]
    assert ours[0][0]["view1"].shape == (12, 12, 12, 3)
    assert all(_same(a, b) for (a, _), (b, _) in zip(ours, theirs))


def test_views_from_a_dict_share_one_list_per_compose(small_data, tmp_path):
    views = {"global1": GLOBAL, "local1": LOCAL, "local2": LOCAL}
    ours, _ = _epoch(data=small_data, transform=views)
    # The two locals are one item with two outputs, as dino.yaml writes them.
    spec = _spec(tmp_path, small_data, {"global1": GLOBAL_YAML, "local1, local2": LOCAL_YAML})
    theirs, _ = _epoch(spec=spec)
    assert list(ours[0][0]) == ["global1", "local1", "local2"]
    assert all(_same(a, b) for (a, _), (b, _) in zip(ours, theirs))
    assert not torch.equal(ours[0][0]["local1"], ours[0][0]["local2"])  # Independent draws.


def test_stages_keyword_takes_a_compose_or_spec_ops(small_data, tmp_path):
    stages = [{"type": "read"}, {"type": "decode"},
              {"type": "transforms", "outputs": ["a"], "ops": GLOBAL},
              {"type": "transforms", "outputs": ["b"],
               "ops": [{"random_resized_crop": {"size": 12, "scale": [0.05, 0.4]}},
                       {"random_grayscale": {"p": 0.2}}]}]
    ours, _ = _epoch(data=small_data, stages=stages)
    theirs, _ = _epoch(spec=_spec(tmp_path, small_data, {"a": GLOBAL_YAML, "b": LOCAL_YAML}))
    assert all(_same(a, b) for (a, _), (b, _) in zip(ours, theirs))


def test_train_and_eval_names_still_work(small_data):
    for name in ("train", "eval"):
        batches, _ = _epoch(data=small_data, transform=name, image_size=16)
        assert batches[0][0].shape == (12, 3, 16, 16)
