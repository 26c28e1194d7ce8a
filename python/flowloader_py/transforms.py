"""flowloader.transforms: torchvision.transforms' classes, as descriptions of native ops.

    import flowloader.transforms as T
    train = T.Compose([T.RandomResizedCrop(224, interpolation=T.InterpolationMode.BICUBIC),
                       T.RandomHorizontalFlip(), T.ToTensor(),
                       T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    loader = flowloader.DataLoader(data, transform=train)

The class names, signatures and defaults are torchvision 0.14's. An object only
describes its transform: it is not callable on images. `Compose.to_ops()` is the view's
native op list (docs/specs.md, "The op list"), which the pipeline runs per sample in C++
without Python (T.Lambda excepted: it calls its function).

How torchvision's tensor conversions map (flowloader's `normalize` op is ToTensor +
Normalize in one):
- ToTensor (or PILToTensor + ConvertImageDtype(torch.float)) followed by Normalize(m, s)
  is normalize(mean=m, std=s): a float32 [3, H, W] view.
- ToTensor without a Normalize is normalize(mean=0, std=1): float32 in [0, 1].
- Without ToTensor and Normalize the view is uint8 [H, W, 3] (torchvision's PIL image).
- Tensor ops (RandomErasing) come after Normalize, as in torchvision's recipes; an op
  between ToTensor and Normalize is refused (the two are one op here).

RandomApply([t], p) is t with probability p (every op takes a `p`); a Random* class
inside it (with its own p) applies with the product of both. Anything flowloader does
not implement (a class, an argument value such as InterpolationMode.LANCZOS or
Grayscale(num_output_channels=1)) raises TypeError naming it and the supported classes.
"""

import enum
import inspect
import numbers

__all__ = [
    "AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ColorJitter", "Compose",
    "ConvertImageDtype", "GaussianBlur", "Grayscale", "InterpolationMode", "Lambda",
    "Normalize", "PILGaussianBlur", "PILToTensor", "RandAugment", "RandomAdjustSharpness", "RandomAffine",
    "RandomApply", "RandomAutocontrast", "RandomCrop", "RandomEqualize", "RandomErasing",
    "RandomGrayscale", "RandomHorizontalFlip", "RandomInvert", "RandomPosterize",
    "RandomResizedCrop", "RandomRotation", "RandomSolarize", "RandomVerticalFlip", "Resize",
    "ToTensor", "TrivialAugmentWide",
]


class InterpolationMode(enum.Enum):
    """torchvision's InterpolationMode; flowloader implements NEAREST, BILINEAR, BICUBIC."""
    NEAREST = "nearest"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class AutoAugmentPolicy(enum.Enum):
    """torchvision's AutoAugmentPolicy."""
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


_INTERPOLATIONS = ("nearest", "bilinear", "bicubic")
# PIL's resampling constants, which torchvision 0.14 still takes (with a warning) for
# interpolation: Image.BICUBIC is 3 (DINO writes it so).
_PIL_FILTERS = {0: "nearest", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming",
                1: "lanczos"}


def _supported():
    return ", ".join(name for name in __all__ if name not in (
        "InterpolationMode", "AutoAugmentPolicy"))


def _refuse(what, why=""):
    raise TypeError(f"flowloader.transforms: {what} is not supported{': ' + why if why else ''}"
                    f" (supported: {_supported()})")


def _interpolation(cls, value):
    """InterpolationMode (ours or torchvision's), its name, or a PIL filter constant ->
    the op's word."""
    name = getattr(value, "value", value)
    if isinstance(name, numbers.Integral) and not isinstance(name, bool):
        name = _PIL_FILTERS.get(int(name), name)
    if isinstance(name, str) and name.lower() in _INTERPOLATIONS:
        return name.lower()
    _refuse(f"{cls}(interpolation={value!r})", "flowloader implements NEAREST, BILINEAR "
            "and BICUBIC")


def _size(value):
    """torchvision's size: an int, or a sequence (h, w), or (s,) meaning s."""
    if isinstance(value, numbers.Number):
        return value
    value = list(value)
    return value[0] if len(value) == 1 else value


def _seq(value):
    """A tuple, list or array (numpy, torch) as a list (the op text's [a, b]); anything
    else as it is."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    return list(value) if isinstance(value, (tuple, list)) else value


class Transform:
    """A torchvision transform as native op(s). _items() is [(op name, {arg: value})]."""

    op = None  # The native op's name.

    def __init__(self, **args):
        self._args = args

    def _items(self):
        return [(self.op, dict(self._args))]

    def __call__(self, *unused):
        raise TypeError(f"flowloader.transforms.{type(self).__name__} describes a native op "
                        "and is not called on images: pass a Compose to "
                        "flowloader.DataLoader(transform=...)")

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._args.items())
        return f"{type(self).__name__}({args})"


# -- tensor conversions: markers that Compose folds into normalize ----------------------
class ToTensor(Transform):
    """PIL image to float32 [3, H, W] in [0, 1]: with a Normalize after it, that
    normalize; alone, normalize(mean=0, std=1)."""

    def __init__(self):
        super().__init__()

    def _items(self):
        return []


class PILToTensor(ToTensor):
    """uint8 [3, H, W]: must be followed by ConvertImageDtype(torch.float) (flowloader's
    views are float32 after normalize, or uint8 [H, W, 3])."""


class ConvertImageDtype(ToTensor):
    """Only ConvertImageDtype(torch.float32) after PILToTensor: ToTensor's result."""

    def __init__(self, dtype):
        super().__init__()
        if str(dtype) not in ("torch.float32", "float32"):
            _refuse(f"ConvertImageDtype({dtype})", "only torch.float (float32), after "
                    "PILToTensor")
        self._args = {"dtype": dtype}


class Normalize(Transform):
    op = "normalize"

    def __init__(self, mean, std, inplace=False):
        super().__init__(mean=_seq(mean), std=_seq(std), inplace=bool(inplace))


# -- geometry ----------------------------------------------------------------------------
class Resize(Transform):
    op = "resize"

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=None):
        if antialias not in (None, True):
            _refuse(f"Resize(antialias={antialias!r})", "PIL images are always antialiased")
        super().__init__(size=_size(size), interpolation=_interpolation("Resize", interpolation),
                         max_size=max_size)


class CenterCrop(Transform):
    op = "center_crop"

    def __init__(self, size):
        super().__init__(size=_size(size))


class RandomResizedCrop(Transform):
    op = "random_resized_crop"

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=None):
        if antialias not in (None, True):
            _refuse(f"RandomResizedCrop(antialias={antialias!r})",
                    "PIL images are always antialiased")
        super().__init__(size=_size(size), scale=_seq(scale), ratio=_seq(ratio),
                         interpolation=_interpolation("RandomResizedCrop", interpolation))


class RandomCrop(Transform):
    op = "random_crop"

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__(size=_size(size), padding=_seq(padding), pad_if_needed=pad_if_needed,
                         fill=_seq(fill), padding_mode=padding_mode)


class RandomHorizontalFlip(Transform):
    op = "random_horizontal_flip"

    def __init__(self, p=0.5):
        super().__init__(p=p)


class RandomVerticalFlip(Transform):
    op = "random_vertical_flip"

    def __init__(self, p=0.5):
        super().__init__(p=p)


def _center(cls, center):
    if center is not None:
        _refuse(f"{cls}(center={center!r})", "only the image centre (center=None)")


class RandomAffine(Transform):
    op = "random_affine"

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        _center("RandomAffine", center)
        super().__init__(degrees=_seq(degrees), translate=_seq(translate), scale=_seq(scale),
                         shear=_seq(shear),
                         interpolation=_interpolation("RandomAffine", interpolation),
                         fill=_seq(fill))


class RandomRotation(Transform):
    op = "random_rotation"

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        _center("RandomRotation", center)
        super().__init__(degrees=_seq(degrees),
                         interpolation=_interpolation("RandomRotation", interpolation),
                         expand=expand, fill=_seq(fill))


# -- colour --------------------------------------------------------------------------------
class ColorJitter(Transform):
    op = "color_jitter"

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__(brightness=_seq(brightness), contrast=_seq(contrast),
                         saturation=_seq(saturation), hue=_seq(hue))


class Grayscale(Transform):
    op = "grayscale"

    def __init__(self, num_output_channels=1):
        if num_output_channels != 3:
            _refuse(f"Grayscale(num_output_channels={num_output_channels!r})",
                    "a view stays RGB: write Grayscale(num_output_channels=3)")
        super().__init__(num_output_channels=3)


class RandomGrayscale(Transform):
    op = "random_grayscale"

    def __init__(self, p=0.1):
        super().__init__(p=p)


class GaussianBlur(Transform):
    op = "gaussian_blur"

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__(kernel_size=_seq(kernel_size), sigma=_seq(sigma))


class PILGaussianBlur(Transform):
    """Not a torchvision class: PIL's ImageFilter.GaussianBlur(radius) with the radius
    drawn uniformly from [radius_min, radius_max], applied with probability p, as DINO's
    utils.GaussianBlur(p, radius_min, radius_max) (and MoCo v3's GaussianBlur inside a
    RandomApply). The same bytes as upstream's class; op pil_gaussian_blur."""
    op = "pil_gaussian_blur"

    def __init__(self, p=0.5, radius_min=0.1, radius_max=2.0):
        super().__init__(radius=[radius_min, radius_max], p=p)


class RandomSolarize(Transform):
    op = "random_solarize"

    def __init__(self, threshold, p=0.5):
        super().__init__(threshold=threshold, p=p)


class RandomPosterize(Transform):
    op = "random_posterize"

    def __init__(self, bits, p=0.5):
        super().__init__(bits=bits, p=p)


class RandomEqualize(Transform):
    op = "random_equalize"

    def __init__(self, p=0.5):
        super().__init__(p=p)


class RandomAutocontrast(Transform):
    op = "random_autocontrast"

    def __init__(self, p=0.5):
        super().__init__(p=p)


class RandomInvert(Transform):
    op = "random_invert"

    def __init__(self, p=0.5):
        super().__init__(p=p)


class RandomAdjustSharpness(Transform):
    op = "random_adjust_sharpness"

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(sharpness_factor=sharpness_factor, p=p)


# -- augment policies -------------------------------------------------------------------
class TrivialAugmentWide(Transform):
    op = "trivial_augment_wide"

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__(num_magnitude_bins=num_magnitude_bins,
                         interpolation=_interpolation("TrivialAugmentWide", interpolation),
                         fill=_seq(fill))


class RandAugment(Transform):
    op = "rand_augment"

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__(num_ops=num_ops, magnitude=magnitude,
                         num_magnitude_bins=num_magnitude_bins,
                         interpolation=_interpolation("RandAugment", interpolation),
                         fill=_seq(fill))


class AutoAugment(Transform):
    op = "auto_augment"

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        name = getattr(policy, "value", policy)
        if name not in ("imagenet", "cifar10", "svhn"):
            _refuse(f"AutoAugment(policy={policy!r})")
        super().__init__(policy=name, interpolation=_interpolation("AutoAugment", interpolation),
                         fill=_seq(fill))


# -- tensor ops ---------------------------------------------------------------------------
class RandomErasing(Transform):
    op = "random_erasing"

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__(p=p, scale=_seq(scale), ratio=_seq(ratio), value=_seq(value),
                         inplace=bool(inplace))


# -- composition --------------------------------------------------------------------------
class RandomApply(Transform):
    """One transform applied with probability p (its op's `p`)."""

    def __init__(self, transforms, p=0.5):
        transforms = list(transforms)
        if len(transforms) != 1:
            raise TypeError(f"flowloader.transforms.RandomApply takes one transform, got "
                            f"{len(transforms)}: a native op applies with its own p, so "
                            "several under one draw cannot be written; give each its own "
                            "RandomApply (independent draws) or use one transform")
        _check(transforms[0])
        self.transforms = transforms
        self.p = p
        self._args = {"p": p}

    def _items(self):
        items = _flatten(self.transforms[0])
        if len(items) != 1 or items[0][0] is None:
            raise TypeError(f"flowloader.transforms.RandomApply takes one transform that is "
                            f"one op, got {self.transforms[0]!r}")
        name, args = items[0]
        args["p"] = self.p * args.get("p", 1)
        return [(name, args)]

    def __repr__(self):
        return f"RandomApply({self.transforms!r}, p={self.p!r})"


class Lambda(Transform):
    """A Python function in the op list: fn(image) or fn(image, rng), image a uint8
    [H, W, 3] numpy array it may change in place or replace (return an array; None keeps
    the image). rng is a numpy.random.Generator seeded from (seed, epoch, sample, view,
    op). Runs on the worker threads, holding the GIL."""

    op = "python_lambda"

    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        from . import _flowloader as core  # The native registry of callables.
        self.lambd = lambd
        self._handle = core._register_lambda(lambd, _wants_rng(lambd))
        self._args = {"id": self._handle.id}

    def __repr__(self):
        return f"Lambda({self.lambd!r})"


def _wants_rng(fn):
    """Whether fn takes a second positional argument (the Generator)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _check(t):
    if not isinstance(t, Transform):
        kind = type(t)
        _refuse(f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins"
                else repr(t))


def _flatten(t):
    """t's op items, ToTensor/PILToTensor/ConvertImageDtype kept as (None, marker)."""
    if isinstance(t, Compose):
        return [item for inner in t.transforms for item in _flatten(inner)]
    if isinstance(t, ToTensor):
        return [(None, {"marker": type(t).__name__})]
    return t._items()


def _value_text(value):
    """A Python value as the op text writes it (ParseOpValue's forms)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    return str(value)


class Compose(Transform):
    """A view's op list, in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for t in self.transforms:
            _check(t)

    def op_items(self):
        """The native ops as [(name, {arg: value})], tensor conversions folded in."""
        out = []
        pending = None  # "float" after ToTensor, "uint8" after PILToTensor.
        flat = _flatten(self)
        for i, (name, args) in enumerate(flat):
            if name is None:
                marker = args["marker"]
                if marker == "ConvertImageDtype":
                    if pending != "uint8":
                        _refuse("ConvertImageDtype without PILToTensor before it")
                    pending = "float"
                elif pending is not None or any(n == "normalize" for n, _ in out):
                    _refuse(f"a second tensor conversion ({marker})")
                else:
                    pending = "uint8" if marker == "PILToTensor" else "float"
                continue
            if pending == "uint8":
                _refuse(f"PILToTensor followed by {name}",
                        "convert with ConvertImageDtype(torch.float) first")
            if name == "normalize":
                pending = None
            elif pending == "float":
                if any(n == "normalize" for n, _ in flat[i + 1:]):
                    _refuse(f"{name} between ToTensor and Normalize", "flowloader's normalize "
                            "is ToTensor + Normalize in one op: put tensor ops after Normalize")
                out.append(("normalize", {"mean": 0, "std": 1}))
                pending = None
            out.append((name, args))
        if pending == "uint8":
            _refuse("PILToTensor without ConvertImageDtype(torch.float)")
        if pending == "float":
            out.append(("normalize", {"mean": 0, "std": 1}))
        return out

    def to_ops(self):
        """The native op list's text (the transforms stage's `ops` option)."""
        return "; ".join(f"{name}(" + ", ".join(f"{k}={_value_text(v)}" for k, v in args.items())
                         + ")" for name, args in self.op_items())

    def to_spec(self):
        """The `ops:` list as a spec writes it: [{name: {arg: value}}]."""
        return [{name: args} for name, args in self.op_items()]

    def __repr__(self):
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose([{inner}\n])"
