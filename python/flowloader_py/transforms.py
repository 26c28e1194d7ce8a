"""flowloader.transforms: torchvision.transforms' classes, as descriptions of native ops.

    import flowloader.transforms as T
    train = T.Compose([T.RandomResizedCrop(224, interpolation=T.InterpolationMode.BICUBIC),
                       T.RandomHorizontalFlip(), T.ToTensor(),
                       T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    loader = flowloader.DataLoader(data, transform=train)

The class names, signatures and defaults are torchvision 0.14's. `Compose.to_ops()` is the
view's native op list (docs/specs.md, "The op list"), which the pipeline runs per sample in
C++ without Python (T.Lambda excepted: it calls its function).

Every object is also callable on one image, as torchvision's are (docs/python.md, "Calling
transforms directly"): `T.ColorJitter(0.4)(pil_image)` runs the same native op (the
pixels are the loader's, the GIL released), its random parameters drawn from torch's
generator in torchvision's order, or from `generator=` (a torch.Generator). The get_params
static methods are torchvision's (RandomResizedCrop.get_params, ...). What an image may be
is in _eager.py: a PIL image (RGB, L), a numpy uint8 HWC array, or a torch tensor
[..., C, H, W] (uint8: PIL's pixels; float32 / float64: torchvision's tensor kernels,
_float.py).

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
not implement (a class, or an argument value flowloader lacks) raises TypeError naming
it and the supported classes.
"""

import enum
import inspect
import math
import numbers
import struct
import sys
from collections.abc import Sequence

__all__ = [
    "AugMix", "AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ColorJitter", "Compose",
    "ConvertImageDtype", "ElasticTransform", "FiveCrop", "GaussianBlur", "Grayscale",
    "InterpolationMode", "Lambda",
    "Normalize", "PILGaussianBlur", "PILToTensor", "Pad", "RandAugment",
    "RandomAdjustSharpness", "RandomAffine", "RandomApply", "RandomAutocontrast",
    "RandomChoice", "RandomCrop", "RandomEqualize", "RandomErasing", "RandomGrayscale",
    "RandomHorizontalFlip", "RandomInvert", "RandomOrder", "RandomPerspective",
    "RandomPosterize",
    "RandomResizedCrop", "RandomRotation", "RandomSolarize", "RandomVerticalFlip", "Resize",
    "TenCrop", "ToPILImage", "ToTensor", "TrivialAugmentWide",
]
# Classes that run when called on an image but not in the loader's op list yet.
_EAGER_ONLY = ("ToPILImage",)


_EAGER = None  # flowloader._eager, once a transform is first called on an image.

class InterpolationMode(enum.Enum):
    """torchvision's InterpolationMode: NEAREST, BILINEAR, BICUBIC everywhere; BOX,
    HAMMING, LANCZOS in Resize and RandomResizedCrop (Pillow's filters, exact)."""
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
_RESIZE_ONLY = ("box", "hamming", "lanczos")
# PIL's resampling constants, which torchvision 0.14 still takes (with a warning) for
# interpolation: Image.BICUBIC is 3 (DINO writes it so).
_PIL_FILTERS = {0: "nearest", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming",
                1: "lanczos"}


# Values quoted in messages are cut to this many characters (as flowloader's _short).
_MAX_VALUE_CHARS = 200


def _cut(text):
    """text on one line, cut to _MAX_VALUE_CHARS characters saying how long it was."""
    text = " ".join(str(text).split("\n"))
    if len(text) > _MAX_VALUE_CHARS:
        text = f"{text[:_MAX_VALUE_CHARS]}... ({len(text)} characters)"
    return text


# Where a refusal points for what is supported (the list of every class made each
# refusal ~800 characters long).
_DOCS = "docs/python.md, \"torchvision 0.14's transform classes\""


def _refuse(what, why=""):
    # `what` quotes the user's value (a class's repr, an argument): cut, so that a 1 MB
    # string gives a line, not a megabyte.
    raise TypeError(f"flowloader.transforms: {_cut(what)} is not supported"
                    f"{': ' + why if why else ''} (see {_DOCS})")


class _FillRangeError(OverflowError, ValueError):
    """A fill past a C int, or infinite: PIL's OverflowError (torchvision's on a PIL
    image), and the ValueError flowloader raised before."""


def _c_int_fill_error(cls, fill, one_band=False):
    """The error torchvision's PIL path raises for `fill` (its _parse_fill's int() of
    each value, then PIL's C int; a one-band image's single number PIL takes as a C long),
    or None: NaN is int()'s ValueError, an infinity or a value past that an OverflowError."""
    bits = 63 if one_band and not isinstance(fill, (list, tuple)) else 31
    for v in fill if isinstance(fill, (list, tuple)) else [fill]:
        if not isinstance(v, numbers.Real) or isinstance(v, bool):
            continue  # Refused by the type checks, or taken.
        if isinstance(v, float) and math.isnan(v):
            return ValueError(f"{cls}: fill {v!r} cannot convert to an integer (PIL's fill: "
                              "give levels in [0, 255])")
        if math.isinf(v) or not -2**bits <= int(v) < 2**bits:
            return _FillRangeError(f"{cls}: fill {_cut(repr(v))} is past a C int (PIL's fill: "
                                   "give levels in [0, 255])")
    return None


def _clamped_fill(fill):
    """PIL's levels of `fill`: each value's int, clamped to [0, 255] (0 for NaN and the
    infinities, which _c_int_fill_error refuses)."""
    def level(v):
        if not isinstance(v, numbers.Real) or isinstance(v, bool) or not math.isfinite(v):
            return 0
        return min(max(int(v), 0), 255)
    return [level(v) for v in fill] if isinstance(fill, (list, tuple)) else level(fill)


class _FilterError(TypeError, ValueError):
    """A resampling filter PIL's rotate and transform lack: torchvision's ValueError, and
    the TypeError flowloader raised before."""


def _interpolation(cls, value, resize=False):
    """InterpolationMode (ours or torchvision's), its name, or a PIL filter constant ->
    the op's word. `resize`: a resize also takes BOX, HAMMING and LANCZOS (Pillow's
    filters; PIL's rotate and affine take none of them, as torchvision's PIL path)."""
    if isinstance(value, (str, bytes)):  # torchvision: "should be a InterpolationMode".
        raise TypeError(f"{cls}: interpolation should be an InterpolationMode, got "
                        f"{_cut(repr(value))} (InterpolationMode.BILINEAR, not its name)")
    name = getattr(value, "value", value)
    if isinstance(name, int):
        # torchvision converts a Python int (True is 1: LANCZOS) with a warning; a numpy
        # int is no InterpolationMode to it (a TypeError at its call).
        name = _PIL_FILTERS.get(int(name), name)
    elif isinstance(name, numbers.Number):
        raise TypeError(f"{cls}: interpolation should be an InterpolationMode, got "
                        f"{_type_name(value)} {_cut(repr(value))}")
    takes = _INTERPOLATIONS + (_RESIZE_ONLY if resize else ())
    if isinstance(name, str) and name.lower() in takes:
        return name.lower()
    if isinstance(name, str) and name.lower() in _RESIZE_ONLY:
        # PIL's rotate and transform refuse these filters with a ValueError (torchvision's
        # call raises it); flowloader raised a TypeError at construction: both, so that
        # code catching either keeps working.
        raise _FilterError(f"flowloader.transforms: {cls}(interpolation={_cut(repr(value))}) "
                           "is not supported: flowloader implements NEAREST, BILINEAR, BICUBIC "
                           "(BOX, HAMMING and LANCZOS in Resize and RandomResizedCrop; PIL's "
                           f"rotate and transform have no such filter) (see {_DOCS})")
    _refuse(f"{cls}(interpolation={value!r})", "flowloader implements NEAREST, BILINEAR, "
            "BICUBIC" + (", BOX, HAMMING and LANCZOS" if resize else " (BOX, HAMMING and "
                         "LANCZOS in Resize and RandomResizedCrop)"))


def _antialias(cls, antialias):
    """torchvision 0.14's antialias: None and True antialias a PIL image; False is taken
    by a float tensor's resize and ignored on uint8 pixels (resized as PIL resizes), with
    torchvision's warning where the call is (_warn_antialias), not at construction.
    Any other value counts by its truth, as torchvision's `antialias is not None and not
    antialias` (PIL) and `if antialias` (tensors): 0, "" and [] are False, "yes" is True.
    Returns whether it counts as False."""
    return antialias is not None and not antialias


def _warn_antialias(kind):
    """The warning for antialias=False on an image of `kind` (_eager.State.kind; None: the
    loader's decoded images) whose uint8 pixels resize antialiased: torchvision's own for
    a PIL image (it warns at each F.resize of one), ours for a uint8 array or tensor."""
    import warnings
    if kind in ("pil", None):
        warnings.warn("Anti-alias option is always applied for PIL Image input. Argument "
                      "antialias is ignored.")
    else:
        warnings.warn("flowloader.transforms: antialias=False is ignored on uint8 pixels "
                      "(resized antialiased, as PIL images); a float tensor takes it")


def _size(value):
    """torchvision's size: an int, or a sequence (h, w), or (s,) meaning s."""
    if isinstance(value, numbers.Number):
        return value
    value = list(value)
    return value[0] if len(value) == 1 else value


def _resize_size(cls, value):
    """Resize's size as torchvision 0.14 takes it: an int, or a sequence of 1 or 2 values
    (it refuses a float or a numpy int with a TypeError; a str is a sequence of its
    length, refused with a ValueError unless it has 1 or 2 characters, which its call
    refuses with a TypeError)."""
    if not isinstance(value, (int, Sequence)):
        raise TypeError(f"{cls}: size should be int or sequence. Got {_cut(type(value))}")
    if isinstance(value, Sequence) and len(value) not in (1, 2):
        raise ValueError(f"{cls}: if size is a sequence, it should have 1 or 2 values, got "
                         f"{_cut(repr(value))}")
    if isinstance(value, Sequence):
        _numbers(cls, "size", value)
    return _size(value)


def _numbers(cls, name, values):
    """TypeError unless every item of `values` is a number (torchvision's call computes
    with them: a str or None there is its TypeError)."""
    for item in values:
        if not _is_number(item):
            raise TypeError(f"{cls}: {name} must hold numbers, got {_cut(repr(values))} (an "
                            f"item of type {_type_name(item)})")


def _setup_size(cls, value):
    """torchvision's _setup_size, the size of CenterCrop, RandomCrop, RandomResizedCrop,
    FiveCrop and TenCrop: a number is int(number) (5.5 is 5), a sequence of 1 its value;
    any other length is refused."""
    if isinstance(value, numbers.Number):
        return int(value)
    # torchvision: a sequence of one is its value twice; anything else with a len() of 2
    # (a tensor, an array, a str of two) is taken, any other len() a ValueError, and no
    # len() at all a TypeError.
    if not (isinstance(value, Sequence) and len(value) == 1):
        try:
            length = len(value)
        except TypeError:
            raise TypeError(f"{cls}: size should be an int or a sequence (h, w), got "
                            f"{_cut(repr(value))}") from None
        if length != 2:
            raise ValueError(f"{cls}: please provide only two dimensions (h, w) for size, "
                             f"got {_cut(repr(value))}")
    value = _seq(value)
    _numbers(cls, "size", value)  # Its call computes with them.
    return _size(value)


def _not_text(cls, name, value):
    """value unless it is a str or bytes: torchvision compares or computes with the number
    (a TypeError for '128'), where the op text would read it as one."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{cls}: {name} must be a number, got {_cut(repr(value))}")
    return value


def _padding(cls, value):
    """torchvision's padding: an int (a numpy one too) or a sequence of ints (a float or a
    str is its TypeError, "Got inappropriate padding arg")."""
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    if not all(isinstance(v, numbers.Integral) for v in values):
        raise TypeError(f"{cls}: padding must be an int or a sequence of ints, got "
                        f"{_cut(repr(value))}")
    return value


def _seq(value):
    """A tuple, list or array (numpy, torch) as a list (the op text's [a, b]); anything
    else as it is."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    return list(value) if isinstance(value, (tuple, list)) else value


# -- random draws as torchvision's (torch's generator, or `generator`) -----------------
_TORCH = None  # The torch module, once imported (an `import` per call cost ~0.2 µs).


def _torch():
    global _TORCH
    if _TORCH is None:
        import torch
        _TORCH = torch
    return _TORCH


# p rounded to float32, by p (a class's p, a few values): _coin runs per eager call.
_P32 = {}


def _coin(p, generator):
    """torchvision's `torch.rand(1) < p`: the float32 draw against p rounded to float32,
    as the tensor comparison does (compared as Python floats: no tensor op per call)."""
    p32 = _P32.get(p) if isinstance(p, float) else None
    if p32 is None:
        p32 = _float32(p)
        if isinstance(p, float) and len(_P32) < 256:
            _P32[p] = p32
    return _torch().rand(1, generator=generator).item() < p32


# -- the one-call path of the flip and crop classes on PIL images ---------------------
_PIL_FAST = None  # (PIL.Image.Image, Image.core.map_buffer, the extension) or ().


def _pil_fast(img):
    """Whether img takes _pil_gather: a PIL image of mode RGB or L, on a Pillow whose
    images can map a buffer and show their row pointers (else the general path)."""
    global _PIL_FAST
    if _PIL_FAST is None:
        pil = sys.modules.get("PIL.Image")
        if pil is None:
            return False  # PIL not imported: img is not a PIL image.
        from flowloader import _flowloader
        ok = hasattr(pil.core, "map_buffer") and hasattr(pil.core.new("L", (1, 1)),
                                                         "unsafe_ptrs")
        _PIL_FAST = (pil.Image, pil.core.map_buffer, _flowloader) if ok else ()
    return bool(_PIL_FAST) and isinstance(img, _PIL_FAST[0]) and img.mode in ("RGB", "L")


def _pil_gather(op, params, img):
    """The gather op `op` (a flip, a crop) with `params` on PIL image img (_pil_fast), in
    one native call from its rows into a new image's: the loader's Op::Gather maps, the
    bytes the general path gives, without its ~5 µs of Python per call."""
    return _PIL_FAST[2]._pil_gather(op, params, img, _PIL_FAST[1])


def _float32(x):
    """x rounded to float32 (as a Python float)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _uniform(lo, hi, generator):
    """torchvision's `torch.empty(1).uniform_(lo, hi).item()`."""
    return _torch().empty(1).uniform_(lo, hi, generator=generator).item()


def _randint(lo, hi, generator):
    """torchvision's `torch.randint(lo, hi, size=(1,)).item()`."""
    return int(_torch().randint(lo, hi, size=(1,), generator=generator).item())


def _image_wh(img):
    """(width, height) of a PIL image, a numpy HWC array or a tensor [..., C, H, W]."""
    if hasattr(img, "size") and not callable(img.size) and not hasattr(img, "ndim"):
        return tuple(img.size)  # PIL.
    if not hasattr(img, "shape") or len(img.shape) < 2:
        raise TypeError(f"flowloader.transforms: expected a PIL image, a numpy array or a "
                        f"tensor of at least 2 dimensions, got {type(img).__module__}."
                        f"{type(img).__qualname__}{tuple(getattr(img, 'shape', ())) or ''}")
    shape = tuple(img.shape)
    if type(img).__module__.startswith("numpy"):
        return shape[1], shape[0]
    return shape[-1], shape[-2]


def _hw(size):
    """torchvision's size (an int or [h, w]) as (h, w)."""
    return (int(size), int(size)) if isinstance(size, numbers.Number) else (
        int(size[0]), int(size[1]))


def _op_text(name, args):
    return f"{name}(" + ", ".join(f"{k}={_value_text(v)}" for k, v in args.items()) + ")"


# Arguments that take words (the op parser's ValueError for an unknown one, as
# torchvision's); any other argument given a str is a TypeError, as torchvision compares
# or computes with it (a p of '0.5', a kernel_size of '3', which the op text read as
# numbers).
_WORD_ARGS = ("padding_mode", "value", "policy", "interpolation", "keypoint_flip")
# Arguments that are one number in torchvision: a sequence there is its TypeError.
_SCALAR_ARGS = ("p", "sharpness_factor", "threshold", "bits", "num_ops", "magnitude",
                "num_magnitude_bins", "severity", "mixture_width", "chain_depth",
                "distortion_scale", "max_size", "gamma", "gain")


def _is_number(value):
    """A real number as torchvision computes with one (bools are ints; a 0-d tensor or
    numpy scalar is one too, as it compares and multiplies as one)."""
    if isinstance(value, numbers.Real):
        return True
    return getattr(value, "ndim", None) == 0 and hasattr(value, "item")


def _type_name(value):
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _wrong_type(name, value):
    """Why `value` of argument `name` is of a type torchvision refuses with a TypeError,
    or None. None itself is only judged where the op refused it (_raise_wrong_type)."""
    if isinstance(value, (list, tuple)):
        if name in _SCALAR_ARGS:
            return f"a number, got {_type_name(value)} {_cut(repr(value))}"
        for item in value:
            if item is None or not (_is_number(item) or isinstance(item, (list, tuple))):
                return (f"a number or a sequence of numbers, got {_cut(repr(value))} (an item "
                        f"of type {_type_name(item)})")
        return None
    if isinstance(value, (str, bytes)):
        return None if name in _WORD_ARGS else f"a number, got str {_cut(repr(value))}"
    if value is None or _is_number(value) or isinstance(value, (enum.Enum, _OpList)):
        return None
    if name in _WORD_ARGS:
        return None
    return f"a number or a sequence of numbers, got {_type_name(value)} {_cut(repr(value))}"


class _StrValueError(TypeError, ValueError):
    """A str where torchvision takes a number and converts it (float(fill), int() of
    distortion_scale times a width, torch.tensor([alpha])): its ValueError there, and the
    TypeError flowloader raised before."""


# Arguments torchvision converts (float(), int(), torch.tensor()) rather than compares:
# a str there is its ValueError.
_CONVERTED_ARGS = ("fill", "distortion_scale", "alpha")


def _check_types(cls, args, int_args):
    """TypeError, as torchvision's, for an argument it cannot compute with: a str where it
    takes a number (the op text read '0.5' as 0.5), an object, a sequence where it takes
    one number, or a float where it takes an int (int_args)."""
    for name, value in args.items():
        why = _wrong_type(name, value)
        if why is not None:
            converted = name in _CONVERTED_ARGS and (isinstance(value, str) or (
                isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value)))
            raise (_StrValueError if converted else TypeError)(f"{cls}: {name} must be {why}")
        if name in int_args:
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, float) or (_is_number(item) and not isinstance(
                        item, numbers.Integral) and "int" not in str(getattr(item, "dtype", ""))):
                    raise TypeError(f"{cls}: {name} must be an int or ints, got "
                                    f"{_cut(repr(value))} (torchvision takes no float there)")


class _TorchRuntimeError(ValueError, RuntimeError):
    """An argument torchvision's call fails on inside torch, a RuntimeError (a size of 0
    for interpolate, a reversed range for uniform_, a reflect pad wider than the image):
    that class, and the ValueError flowloader raised before."""


class _TorchNotImplementedError(ValueError, NotImplementedError):
    """A PIL filter (BOX, HAMMING, LANCZOS) in a tensor's resize: torch's interpolate's
    NotImplementedError, and the ValueError flowloader raised before."""


class _TorchIndexError(ValueError, IndexError):
    """An argument torchvision indexes with past its end (RandAugment's magnitude into its
    bins): its IndexError, and the ValueError flowloader raised before."""


def _reversed_pair(v):
    return isinstance(v, (list, tuple)) and len(v) == 2 and all(
        isinstance(x, numbers.Real) for x in v) and v[0] > v[1]


def _nan(v):
    """Whether v holds a NaN (uniform_'s "from is out of bounds" RuntimeError)."""
    values = v if isinstance(v, (list, tuple)) else [v]
    return any(isinstance(x, float) and math.isnan(x) for x in values)


def _has_nonpositive(v):
    values = v if isinstance(v, (list, tuple)) else [v]
    return any(isinstance(x, numbers.Real) and not isinstance(x, bool) and x <= 0
               for x in values)


# The op parser's refusals of values torchvision's call fails on inside torch (or by an
# index): (op, argument) -> (the class, when the value is one it fails on).
_TORCH_FAILURES = {
    ("resize", "size"): (_TorchRuntimeError, _has_nonpositive),  # (PIL: its ValueError.)
    ("random_resized_crop", "size"): (_TorchRuntimeError, _has_nonpositive),
    ("random_resized_crop", "scale"): (_TorchRuntimeError, _reversed_pair),
    ("random_resized_crop", "ratio"): (
        _TorchRuntimeError, lambda v: _reversed_pair(v) or (
            isinstance(v, (list, tuple)) and len(v) == 2 and _has_nonpositive(v))),
    # A scale or ratio of one value: get_params' scale[1] / ratio[1], an IndexError.
    ("random_resized_crop", "scale "): (
        _TorchIndexError, lambda v: isinstance(v, (list, tuple)) and len(v) < 2),
    ("random_resized_crop", "ratio "): (
        _TorchIndexError, lambda v: isinstance(v, (list, tuple)) and len(v) < 2),
    ("random_erasing", "scale"): (_TorchRuntimeError, _reversed_pair),
    ("random_erasing", "ratio"): (_TorchRuntimeError, _reversed_pair),
    ("random_rotation", "degrees"): (_TorchRuntimeError, lambda v: _reversed_pair(v) or _nan(v)),
    ("random_affine", "degrees"): (_TorchRuntimeError, lambda v: _reversed_pair(v) or _nan(v)),
    ("random_affine", "shear"): (_TorchRuntimeError, _reversed_pair),
    ("random_perspective", "distortion_scale"): (
        _TorchRuntimeError, lambda v: isinstance(v, numbers.Real) and v < 0),
    ("trivial_augment_wide", "num_magnitude_bins"): (
        _TorchRuntimeError, lambda v: isinstance(v, numbers.Integral) and v < 1),
    ("rand_augment", "num_magnitude_bins"): (
        _TorchIndexError, lambda v: isinstance(v, numbers.Integral) and v < 1),
    ("rand_augment", "magnitude"): (_TorchIndexError, lambda v: isinstance(v, numbers.Real)),
}


def _raise_torch_failure(error, args):
    """The op parser's ValueError `error` as the class torchvision's call raises for that
    value (_TORCH_FAILURES), which is a ValueError too."""
    head = str(error).split(":", 2)
    op, name = head[0].strip(), head[1].strip().split(" ")[0] if len(head) > 1 else ""
    for key in ((op, name), (op, name + " ")):  # (A second class for the same argument.)
        found = _TORCH_FAILURES.get(key)
        if found is not None and name in args and found[1](args[name]):
            raise found[0](str(error)) from None


def _raise_wrong_type(error, args):
    """The op parser's ValueError `error` as a TypeError when the argument it names holds
    None (torchvision's comparisons and arithmetic with None raise TypeError) or a float
    with a fraction where the op takes an integer (torchvision's int operations on it,
    `~` of posterize's bits, raise TypeError)."""
    head = str(error).split(":", 2)
    name = head[1].strip().split(" ")[0] if len(head) > 1 else ""
    value = args.get(name, 0)
    fraction = isinstance(value, float) and not value.is_integer()
    if name in args and (value is None or (fraction and "must be an integer" in head[1])):
        raise TypeError(str(error)) from None


def _packed_fill(fill):
    """A fill that torchvision's _parse_fill leaves one value on a PIL image of several
    channels (it repeats only Python ints and floats): a numpy scalar such as np.int64(7)
    or np.float32(2.5). PIL reads that one value as a packed colour, 0xAABBGGRR of its
    int (truncated): returns that int (np.int64(300) is red 44, green 1), else None."""
    if isinstance(fill, numbers.Number) and not isinstance(fill, (int, float)) and \
            hasattr(fill, "dtype") and getattr(fill, "ndim", 0) == 0:
        return int(fill) & 0xFFFFFFFF
    return None


def _unpacked(packed, channels):
    """The `channels` values PIL takes from packed colour `packed` (R in the low byte)."""
    return [(packed >> (8 * i)) & 0xFF for i in range(channels)]


def _grid_fill_levels(cls, fill, channels):
    """The levels torchvision's grid transforms (rotate, affine, perspective, the policies'
    sub-ops) fill a uint8 tensor with: `fill` (a number or a sequence) as a float32
    tensor, torch.round (half to even), cast to uint8 as torch casts (modular: 300 is 44,
    -1 is 255, 2.7 is 3; past int32 or NaN 0), where PIL would truncate and clamp. A
    sequence of more than one value must have one per channel (_assert_grid_transform_
    inputs' ValueError). Returns three levels (a one-channel image runs as three)."""
    torch = _torch()
    values = list(fill) if isinstance(fill, (list, tuple)) else [fill]
    if len(values) > 1 and len(values) != channels and channels > 0:
        raise ValueError(f"{cls}: the number of elements in 'fill' cannot broadcast to match "
                         f"the number of channels of the image ({len(values)} != {channels})")
    levels = torch.tensor(values, dtype=torch.float32).round().to(torch.uint8).tolist()
    return (levels * 3)[:3] if len(levels) == 1 else (levels * 3 if channels == 1 else levels)


class _FloatFillOp:
    """A native op as a float tensor's kernels read it (_float.py reads the arguments
    from `text`): its text holds a fill the op parser refuses (past a C int, NaN), which
    torchvision's float kernels take as they take any float."""

    def __init__(self, op, text):
        self._op, self.text = op, text

    def __getattr__(self, name):
        return getattr(self._op, name)


class Transform:
    """A torchvision transform as native op(s). _items() is [(op name, {arg: value})]."""

    op = None  # The native op's name.

    def __init__(self, **args):
        # A numpy scalar fill that torchvision hands to PIL as one packed colour.
        raw_fill = args.pop("_raw_fill", None)
        self._packed_fill = _packed_fill(raw_fill)
        if self._packed_fill is not None:
            self._raw_fill_type = type(raw_fill).__name__  # (_tensor_fill_op's TypeError.)
        p = args.get("p")
        if getattr(p, "ndim", None) == 0 and hasattr(p, "item"):
            args["p"] = p.item()  # A 0-d tensor or numpy p: torch.rand(1) < p takes it.
        self._args = args

    # Whether torchvision's class draws `torch.rand(1) < p` before its parameters.
    _draws_p = False
    # Arguments torchvision uses as ints (range, randint, linspace, indexing): a float
    # there, even 2.0, is its TypeError (_check_types).
    _int_args = ()
    # Of those, the ones torch takes as its own argument (randint's high, linspace's
    # steps), where a bool is its TypeError (range() and indexing take one).
    _no_bool_args = ()
    # Resize / RandomResizedCrop(antialias=False): warned where the pixels are uint8.
    _no_antialias = False
    # The fill is torchvision's grid_sample fill on a tensor (rotations, warps, the
    # policies): on a uint8 tensor its level is torch's cast (_grid_fill_levels).
    _grid_fill = False
    _grid_fill_pil = False  # On a PIL image too (AugMix runs it as a tensor).
    # The fill is parsed only when a geometric sub-op is drawn (the policies'
    # F.affine / F.rotate): its length is checked there (_policy_fill).
    _fill_at_draw = False
    # The fill is PIL's int() of it on a PIL image (ElasticTransform's is a float).
    _pil_int_fill = True

    def _fill_parsed(self, state):
        """Whether torchvision's call parses the fill (Pad: constant mode only)."""
        return True

    def _raise_fill_error(self):
        """PIL's error for a fill it cannot take (_c_int_fill_error), kept by _native
        for the place torchvision's call parses the fill."""
        error = self.__dict__.get("_fill_error")
        if error is not None:
            raise error

    def _items(self):
        args = dict(self._args)
        p = args.get("p")
        if isinstance(p, float) and math.isnan(p):
            args["p"] = 0  # torch.rand(1) < nan: never (NaN is not in the op text).
        return [(self.op, args)]

    def __call__(self, img, *, generator=None):
        """The transform of one image (or one [B, C, H, W] batch, one draw for all):
        torchvision's forward, on the native op. generator: a torch.Generator to draw
        from (default: torch's global one, as torchvision)."""
        global _EAGER
        if _EAGER is None:  # Imported once: a `from` import per call cost ~0.5 µs.
            from flowloader import _eager
            _EAGER = _eager
        return _EAGER.call(self, img, generator)

    def _native(self, state=None):
        """The native op (an _EagerOp), made once (for `state`'s image: a packed fill's
        on a PIL image, _packed_op). Arguments of a type torchvision cannot
        compute with are its TypeError (_check_types), not the op parser's ValueError."""
        op = self.__dict__.get("_native_op")
        uint8_grid = state is not None and self._grid_fill and not state.is_float and (
            state.kind == "tensor" or (state.kind == "pil" and self._grid_fill_pil))
        if op is None:
            (name, args), = self._items()
            fill_error = _c_int_fill_error(type(self).__name__, self._args.get("fill")) \
                if self._pil_int_fill else None
            if fill_error is not None and "fill" in args:
                # A fill PIL cannot take (past a C int, NaN) is PIL's error on a PIL image;
                # the op made with fill 0 checks the other arguments, and is not kept.
                base = self._make_op(name, dict(args, fill=_clamped_fill(args["fill"])))
                if uint8_grid:  # A uint8 tensor's fill: torch's cast of it, any value.
                    return self._tensor_fill_op(state.channels, state.kind == "tensor")
                if state is not None and state.kind == "tensor" and state.is_float:
                    self._float_checks(state)
                    return _FloatFillOp(base, _op_text(name, args))
                if state is not None and state.kind == "tensor":
                    return base  # A uint8 tensor's pad refuses it where it pads (_tensor_fill).
                if state is None:
                    raise fill_error
                # A PIL image: raised where torchvision parses the fill (_raise_fill_error:
                # after the coin, where a pad is constant, where a policy's warp is drawn);
                # a one-band image's number past a C int but not a C long is clamped.
                self._fill_error = _c_int_fill_error(
                    type(self).__name__, self._args.get("fill"), state.channels == 1)
                return base
            op = self._native_op = self._make_op(name, args)
        if uint8_grid:
            return self._tensor_fill_op(state.channels, state.kind == "tensor")
        if state is not None and state.kind == "tensor" and state.is_float:
            self._float_checks(state)
        if state is not None and self.__dict__.get("_packed_fill") is not None and \
                state.kind == "pil" and state.channels > 1:
            return self._packed_op(state.channels)
        return op

    def _float_checks(self, state):
        """torchvision's forward on a float tensor: a warp's fill made floats (`[float(f)
        for f in fill]`: a numpy scalar that is not a Python float is its TypeError)."""
        if self._grid_fill and self.__dict__.get("_raw_fill_type") is not None and \
                self._args.get("fill") is not None:
            raise TypeError(f"{type(self).__name__}: '{self._raw_fill_type}' object is not "
                            "iterable (torchvision's fill on a tensor: a Python int or float, "
                            "or a sequence)")

    def _make_op(self, name, args):
        """The _EagerOp of `name` with `args`, after torchvision's type checks."""
        from flowloader import _flowloader
        _check_types(type(self).__name__, args, self._int_args)
        for arg in self._no_bool_args:
            if isinstance(args.get(arg), bool):
                raise TypeError(f"{type(self).__name__}: {arg} must be an int, got bool "
                                f"{args[arg]!r}")
        try:
            return _flowloader._EagerOp(_op_text(name, args))
        except ValueError as e:
            _raise_wrong_type(e, args)
            _raise_torch_failure(e, args)
            raise

    def _tensor_fill_op(self, channels, tensor):
        """The native op for a uint8 tensor of `channels` channels (`tensor`; AugMix's PIL
        image, which it runs as one, otherwise): torchvision's forward makes a tensor's
        fill floats (`[float(fill)] * channels`, or `[float(f) for f in fill]`: a numpy
        int scalar is its TypeError there), and its grid transform fills with their torch
        uint8 cast (_grid_fill_levels)."""
        fill = self._args.get("fill")
        if fill is None:
            return self._native()
        if tensor and self.__dict__.get("_raw_fill_type") is not None:
            raise TypeError(f"{type(self).__name__}: '{self._raw_fill_type}' object is not "
                            "iterable (torchvision's fill on a tensor: a Python int or float, "
                            "or a sequence)")
        # The policies check the fill's length where a geometric sub-op is drawn
        # (_policy_fill): -1 channels, none checked here.
        levels = _grid_fill_levels(type(self).__name__, fill,
                                   -1 if self._fill_at_draw else channels)
        levels = (levels * 3)[:3]
        ops = self.__dict__.setdefault("_packed_ops", {})
        key = ("tensor", tuple(levels))
        if key not in ops:
            from flowloader import _flowloader
            (name, args), = self._items()
            args["fill"] = levels
            ops[key] = _flowloader._EagerOp(_op_text(name, args))
        return ops[key]

    def _packed_op(self, channels):
        """The native op of a packed numpy fill (_packed_fill) on a PIL image of
        `channels` channels: its fill the channel values PIL reads from it."""
        ops = self.__dict__.setdefault("_packed_ops", {})
        if channels not in ops:
            from flowloader import _flowloader
            (name, args), = self._items()
            args["fill"] = _unpacked(self._packed_fill, channels)
            ops[channels] = _flowloader._EagerOp(_op_text(name, args))
        return ops[channels]

    def __getstate__(self):
        # The native op made by a first call is not picklable (a torch DataLoader's
        # spawned workers pickle the transform): it is made again where it is used.
        state = dict(self.__dict__)
        state.pop("_native_op", None)
        state.pop("_packed_ops", None)
        return state

    def _eager(self, state, generator):
        """Queues this transform's work on `state` (_eager.State)."""
        # The native op first: it checks every argument (p, sizes, paddings) in one line,
        # before a draw reads one (p="a" or padding=[1, 2, 3] broke inside the draw).
        try:
            op = self._native(state)
        except (TypeError, ValueError):
            # torchvision's classes that draw `torch.rand(1) < p` first read their other
            # arguments only in the F call the coin makes: a value it refuses there fails
            # only when the coin applies it (RandomPosterize(-1, p=0.5) returns the image
            # half the time). A p that is no number is refused at once, as before.
            if not self._draws_p or not _is_number(self._args.get("p")) or isinstance(
                    self._args.get("p"), (str, bytes)) or _coin(self._args["p"], generator):
                raise
            return
        if self._no_antialias and not state.is_float:
            _warn_antialias(state.kind)
        if self._draws_p and not _coin(self._args["p"], generator):
            return
        if not self._fill_at_draw and self._fill_parsed(state):
            self._raise_fill_error()
        state.native(op, self._draw(state, generator))

    def _draw(self, state, generator):
        """The op's parameters (OpParams, in torchvision's get_params order)."""
        return []

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

    def _eager(self, state, generator):
        if state.kind == "tensor":
            raise TypeError("pic should be PIL Image or ndarray. Got <class 'torch.Tensor'>")
        if _other_mode_pil(state):
            state.replace(_other_mode_tensor(state._raw, to_float=True))
            return
        state.to_float_tensor()


class PILToTensor(ToTensor):
    """uint8 [3, H, W]: must be followed by ConvertImageDtype(torch.float) (flowloader's
    views are float32 after normalize, or uint8 [H, W, 3])."""

    def _eager(self, state, generator):
        if _other_mode_pil(state):
            state.replace(_other_mode_tensor(state._raw, to_float=False))
            return
        if state.kind != "pil":
            raise TypeError(f"pic should be PIL Image. Got {state.kind}")
        state.to_uint8_tensor()


def _other_mode_pil(state):
    """Whether the image is a PIL image of a mode the native ops do not take (RGBA, P,
    I;16, ...): ToTensor and PILToTensor convert it as torchvision does."""
    if state.kind != "raw":
        return False
    from PIL import Image
    return isinstance(state._raw, Image.Image)


def _other_mode_tensor(pic, to_float):
    """torchvision 0.14's to_tensor (to_float) or pil_to_tensor of a PIL image of any mode:
    its numpy array as [C, H, W] (I as int32, I;16 as int16, F as float32; mode 1 times
    255 for to_tensor), uint8 ones divided by 255 to float32 by to_tensor."""
    import numpy as np
    torch = _torch()
    if to_float:
        dtype = {"I": np.int32, "I;16": np.int16, "F": np.float32}.get(pic.mode, np.uint8)
        img = torch.from_numpy(np.array(pic, dtype, copy=True))
        if pic.mode == "1":
            img = 255 * img
    else:
        img = torch.as_tensor(np.array(pic, copy=True))
    img = img.view(pic.size[1], pic.size[0], len(pic.getbands())).permute((2, 0, 1))
    if not to_float:
        return img
    img = img.contiguous()
    return img.to(dtype=torch.get_default_dtype()).div(255) if img.dtype == torch.uint8 \
        else img


class ConvertImageDtype(ToTensor):
    """ConvertImageDtype(torch.float32) after PILToTensor: ToTensor's result. Called on an
    image, torch.uint8 too (a float tensor's `x * 255.999`, as torchvision's); the loader
    takes torch.float32 only."""

    def __init__(self, dtype):
        super().__init__()
        if str(dtype) not in ("torch.float32", "float32", "torch.uint8", "uint8"):
            _refuse(f"ConvertImageDtype({dtype})", "only torch.float (float32), after "
                    "PILToTensor, or torch.uint8 called on an image")
        self._to_uint8 = str(dtype) in ("torch.uint8", "uint8")
        self._args = {"dtype": dtype}

    def _eager(self, state, generator):
        if state.kind != "tensor":
            raise TypeError("Input img should be Tensor Image")
        if self._to_uint8:
            if state.is_float:
                state.float_to_uint8()
        elif not state.is_float:
            state.to_float_tensor()
        elif state.tensor_dtype != _torch().float32:
            state.to_float32()  # float64 -> float32, as torchvision's.


class Normalize(Transform):
    """On a float tensor: torchvision's F.normalize (`(x - mean) / std`, float32). Right
    after ToTensor (or PILToTensor + ConvertImageDtype) in a Compose, the pair is the
    loader's normalize op (the same bytes as the loader's view)."""
    op = "normalize"

    def __init__(self, mean, std, inplace=False):
        super().__init__(mean=_seq(mean), std=_seq(std), inplace=bool(inplace))

    def _eager(self, state, generator):
        if state.kind != "tensor" or not state.is_float:
            raise TypeError("Input tensor should be a float tensor (after ToTensor), got "
                            + ("a uint8 tensor" if state.kind == "tensor" else
                               f"a {state.kind} image"))
        torch = _torch()
        # In the tensor's dtype, as torchvision's F.normalize (float64 stays float64).
        dtype = torch.float64 if state.tensor_dtype == torch.float64 else torch.float32
        mean = torch.as_tensor(self._args["mean"], dtype=dtype).reshape(-1, 1, 1)
        std = torch.as_tensor(self._args["std"], dtype=dtype).reshape(-1, 1, 1)
        if (std == 0).any():
            raise ValueError(f"std evaluated to zero after conversion to torch.float32, "
                             f"leading to division by zero: {self._args['std']}")
        if state.channels == 1 and (mean.numel() > 1 or std.numel() > 1):
            state.channels = 3  # Broadcast over the (equal) channels, as torch does.
        state.map_float(lambda a: torch.from_numpy(a).sub(mean).div(std).numpy())


# -- geometry ----------------------------------------------------------------------------
class Resize(Transform):
    _int_args = ("size",)  # Its call's int sizes: (1.0, 2.0) is torchvision's TypeError.
    op = "resize"

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=None):
        self._no_antialias = _antialias("Resize", antialias)
        super().__init__(size=_resize_size("Resize", size),
                         interpolation=_interpolation("Resize", interpolation, resize=True),
                         max_size=max_size)
        if antialias:  # Float tensors' antialias path (PIL images always antialias).
            self._args["antialias"] = True
        self._bool_size = _bool_first(size, (2,))  # A size of one becomes ints.

    def _draw(self, state, generator):
        _tensor_resize(_uint8_tensor(state), self._args["interpolation"])
        _tensor_bool_size("Resize", state.kind, self._bool_size)
        return []


class CenterCrop(Transform):
    op = "center_crop"

    def __init__(self, size):
        super().__init__(size=_setup_size("CenterCrop", size))

    def __call__(self, img, *, generator=None):
        if _pil_fast(img):
            op = self._native()  # Checks the size.
            hw = self.__dict__.get("_crop_hw")
            if hw is None:
                hw = self._crop_hw = _hw(self._args["size"])
            # A crop the size of the image is Image.crop of its whole box in
            # torchvision: a copy of its rows, which Image.copy makes (its core's copy
            # once decoded: Image.load's pixel-access object is ~0.4 µs a call).
            if hw == (img.size[1], img.size[0]):
                return img.copy() if img.im is None else img._new(img.im.copy())
            _pil_float_pad("pil", "CenterCrop", self._args["size"], *img.size)
            return _pil_gather(op, (), img)  # F.center_crop's box (zero-padded).
        return super().__call__(img, generator=generator)

    def _eager(self, state, generator):
        # F.center_crop's box where it fits (a larger crop pads, in the op).
        _tensor_int_size(_uint8_tensor(state), "CenterCrop", self._args["size"])
        w, h = state.size()
        _pil_float_pad(state.kind, "CenterCrop", self._args["size"], w, h)
        th, tw = _hw(self._args["size"])
        box = None
        if th <= h and tw <= w:
            box = [int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw]
        state.native(self._native(), [], box=box, corner=False)


class RandomResizedCrop(Transform):
    _int_args = ("size",)  # Its call's int sizes: (1.0, 2.0) is torchvision's TypeError.
    op = "random_resized_crop"

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=None):
        self._no_antialias = _antialias("RandomResizedCrop", antialias)
        for name, pair in (("scale", scale), ("ratio", ratio)):
            if not isinstance(pair, Sequence):  # torchvision's own check.
                raise TypeError(f"RandomResizedCrop: {name} should be a sequence, got "
                                f"{_type_name(pair)} {_cut(repr(pair))}")
        # torchvision reads scale[0], scale[1] (ratio's too): a longer list's rest is unused.
        scale, ratio = _seq(scale), _seq(ratio)
        scale = scale[:2] if isinstance(scale, list) and len(scale) > 2 else scale
        ratio = ratio[:2] if isinstance(ratio, list) and len(ratio) > 2 else ratio
        super().__init__(size=_setup_size("RandomResizedCrop", size), scale=scale,
                         ratio=ratio,
                         interpolation=_interpolation("RandomResizedCrop", interpolation,
                                                      resize=True))
        if antialias:  # Float tensors' antialias path (PIL images always antialias).
            self._args["antialias"] = True
        # _setup_size makes (s, s) of a size of one: its height a bool too.
        self._bool_size = _bool_first(size, (1, 2))

    @staticmethod
    def get_params(img, scale, ratio, *, generator=None):
        """torchvision's: (top, left, height, width) of a random crop of `img`."""
        width, height = _image_wh(img)
        return RandomResizedCrop._box(width, height, scale, ratio, generator)

    @staticmethod
    def _box(width, height, scale, ratio, generator):
        torch = _torch()
        area = height * width
        log_ratio = torch.log(torch.tensor(ratio))
        for _ in range(10):
            target_area = area * _uniform(scale[0], scale[1], generator)
            aspect_ratio = torch.exp(torch.empty(1).uniform_(
                log_ratio[0], log_ratio[1], generator=generator)).item()
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = _randint(0, height - h + 1, generator)
                j = _randint(0, width - w + 1, generator)
                return i, j, h, w
        in_ratio = float(width) / float(height)  # The fallback: a central crop.
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def _draw(self, state, generator):
        w, h = state.size()
        box = list(self._box(w, h, self._args["scale"], self._args["ratio"], generator))
        _tensor_resize(_uint8_tensor(state), self._args["interpolation"])
        _tensor_bool_size("RandomResizedCrop", state.kind, self._bool_size)
        return box

    def _eager(self, state, generator):
        op = self._native()  # Checks the arguments before the draw reads them.
        if self._no_antialias and not state.is_float:
            _warn_antialias(state.kind)
        params = self._draw(state, generator)
        state.native(op, params, box=params)  # Crops first, as F.resized_crop.


class RandomCrop(Transform):
    _int_args = ("size",)  # Its call's int sizes: (1.0, 2.0) is torchvision's TypeError.
    op = "random_crop"

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        if padding is not None:
            _padding("RandomCrop", padding)
        elif not pad_if_needed:
            # Never padded: torchvision never reads fill or padding_mode (a 'wrap' or a
            # fill of two values is taken), so neither is checked.
            fill, padding_mode = 0, "constant"
        super().__init__(size=_setup_size("RandomCrop", size), padding=_seq(padding),
                         pad_if_needed=bool(pad_if_needed),  # torchvision tests its truth.
                         fill=_seq(fill), _raw_fill=fill, padding_mode=padding_mode)
        if padding is not None and not isinstance(padding, (int, tuple, list)):
            self._raw_padding = padding  # A numpy int: a tensor's TypeError (_tensor_padding).

    def _items(self):
        # torchvision reads the fill in constant mode only (Pad's _items).
        (name, args), = super()._items()
        if args["padding_mode"] != "constant":
            args["fill"] = 0
        return [(name, args)]

    @staticmethod
    def get_params(img, output_size, *, generator=None):
        """torchvision's: (top, left, height, width) of a random output_size crop."""
        w, h = _image_wh(img)
        return RandomCrop._corner(w, h, _hw(output_size), generator)

    @staticmethod
    def _corner(w, h, size, generator):
        th, tw = size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size "
                             f"{(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = _randint(0, h - th + 1, generator)
        j = _randint(0, w - tw + 1, generator)
        return i, j, th, tw

    def _draw(self, state, generator):
        # The size after forward's padding (padding, then pad_if_needed's both sides).
        w, h = state.size()
        pad = self._args["padding"]
        if pad is None:
            pad = [0]
        pad = [pad] if isinstance(pad, numbers.Number) else list(pad)
        if len(pad) == 1:
            pad = pad * 4
        elif len(pad) == 2:
            pad = [pad[0], pad[1], pad[0], pad[1]]
        w, h = w + int(pad[0]) + int(pad[2]), h + int(pad[1]) + int(pad[3])
        th, tw = _hw(self._args["size"])
        if self._args["pad_if_needed"]:
            w = w + 2 * (tw - w) if w < tw else w
            h = h + 2 * (th - h) if h < th else h
        return list(self._corner(w, h, (th, tw), generator))

    def _eager(self, state, generator):
        op = self._native(state)  # Checks the arguments before the draw reads them.
        w, h = state.size()
        mode, kind = self._args["padding_mode"], _uint8_tensor(state)
        _tensor_pad(kind, w, h, self._args["padding"], mode)
        raw_type = self.__dict__.get("_raw_fill_type")
        if self._args["padding"] is not None:  # forward's first F.pad: its type checks.
            _tensor_padding(kind, self.__dict__.get("_raw_padding"))
            _tensor_fill(kind, self._args["fill"], raw_type, constant=mode == "constant")
        p = _sides([0] if self._args["padding"] is None else self._args["padding"])
        pw, ph = w + int(p[0]) + int(p[2]), h + int(p[1]) + int(p[3])
        th, tw = _hw(self._args["size"])
        second = self._args["pad_if_needed"] and (pw < tw or ph < th)  # forward's 2nd pad.
        if self._args["pad_if_needed"]:
            _tensor_pad(kind, pw, ph, [max(0, tw - pw), max(0, th - ph)], mode)
        if second:
            _tensor_fill(kind, self._args["fill"], raw_type, constant=mode == "constant")
        if mode == "constant" and (self._args["padding"] is not None or second):
            _pil_fill(state, "RandomCrop", self._args["fill"])  # Where F.pad parses it.
            self._raise_fill_error()
        params = self._draw(state, generator)
        no_pad = self._args["padding"] in (None, 0, [0], [0, 0], [0, 0, 0, 0])
        state.native(op, params,
                     box=params if no_pad and not self._args["pad_if_needed"] else None)


class _Flip(Transform):
    """A flip class: on a PIL image, torchvision's draw then one native call
    (_pil_gather); else the general path."""
    _draws_p = True

    def __init__(self, p=0.5):
        super().__init__(p=p)

    def __call__(self, img, *, generator=None):
        if _pil_fast(img):
            op = self._native()  # Checks p before the draw reads it.
            return _pil_gather(op, (), img) if _coin(self._args["p"], generator) else img
        return super().__call__(img, generator=generator)


class RandomHorizontalFlip(_Flip):
    """torchvision's RandomHorizontalFlip. `keypoint_flip` (flowloader's; detection
    keypoints only): "coco_person" or a permutation of the P keypoint indices, swapping
    each instance's left and right points as the references' flip_inds do."""
    op = "random_horizontal_flip"

    def __init__(self, p=0.5, keypoint_flip=None):
        if keypoint_flip is None:
            super().__init__(p=p)
        else:
            Transform.__init__(self, p=p, keypoint_flip=keypoint_flip)


class RandomVerticalFlip(_Flip):
    op = "random_vertical_flip"


def _str_angle(value, lengths=(2,)):
    """torchvision's _setup_angle of a str of an accepted length: a sequence of its
    characters, each float() (degrees='10' is [1.0, 0.0]; 'ab' its ValueError)."""
    if isinstance(value, str) and len(value) in lengths:
        try:
            return [float(c) for c in value]
        except ValueError:
            raise ValueError(f"could not convert string to float in {_cut(repr(value))} "
                             "(torchvision's float() of each character)") from None
    return value


def _check_angle(cls, name, value, lengths=(2,)):
    """torchvision's _setup_angle / _check_sequence_input, their checks only (the op takes
    the value as given): a number >= 0, or a sequence of one of `lengths` numbers; no
    sequence at all (None, a tensor, a numpy bool) is its TypeError, a str a sequence of
    its length (its ValueError)."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"{cls}: if {name} is a single number, it must be positive, got "
                             f"{_cut(repr(value))}")
        return
    if not isinstance(value, Sequence):
        raise TypeError(f"{cls}: {name} should be a sequence of length "
                        f"{' or '.join(map(str, lengths))}, got {_type_name(value)} "
                        f"{_cut(repr(value))}")
    if len(value) not in lengths:
        raise ValueError(f"{cls}: {name} should be a sequence of length "
                         f"{' or '.join(map(str, lengths))}, got {_cut(repr(value))}")
    for item in value:
        if isinstance(item, (str, bytes)):  # float('a'): torchvision's ValueError.
            raise ValueError(f"{cls}: {name} must hold numbers, got {_cut(repr(value))}")
    _numbers(cls, name, value)


def _check_fill(cls, fill):
    """torchvision's fill check of the rotations and warps: None, a number or a sequence."""
    if fill is not None and not isinstance(fill, (Sequence, numbers.Number)):
        raise TypeError(f"{cls}: fill should be either a sequence or a number, got "
                        f"{_type_name(fill)} {_cut(repr(fill))}")


def _check_affine_ranges(translate, scale):
    """RandomAffine's translate and scale checks, torchvision's: sequences of two, each
    translate in [0, 1] and each scale > 0."""
    for name, pair in (("translate", translate), ("scale", scale)):
        if pair is None:
            continue
        if not isinstance(pair, Sequence):  # A number too: _check_sequence_input's.
            raise TypeError(f"RandomAffine: {name} should be a sequence of length 2, got "
                            f"{_type_name(pair)} {_cut(repr(pair))}")
        _check_angle("RandomAffine", name, pair)
        if name == "translate" and not all(0.0 <= t <= 1.0 for t in pair):
            raise ValueError(f"RandomAffine: translation values should be between 0 and 1, "
                             f"got {_cut(repr(pair))}")
        if name == "scale" and any(v <= 0 for v in pair):
            raise ValueError(f"RandomAffine: scale values should be positive, got "
                             f"{_cut(repr(pair))}")


def _pil_fill(state, cls, fill):
    """torchvision's _parse_fill on a PIL image: a fill sequence must have one value per
    channel (a ValueError at the call; flowloader's op would repeat one value)."""
    if state.kind == "pil" and isinstance(fill, (list, tuple)) and len(fill) != state.channels:
        raise ValueError(f"{cls}: the number of elements in 'fill' does not match the number "
                         f"of channels of the image ({len(fill)} != {state.channels})")


def _policy_fill(state, cls, fill):
    """A policy's fill where a geometric sub-op is drawn, as its F.affine / F.rotate
    parse it: on a PIL image one value per channel or one number (_parse_fill), on a
    tensor one value or one per channel (_assert_grid_transform_inputs); ValueError."""
    if state.kind == "pil":
        _pil_fill(state, cls, fill)
    elif state.kind == "tensor" and isinstance(fill, (list, tuple)) and len(fill) > 1 and \
            len(fill) != state.channels:
        raise ValueError(f"{cls}: the number of elements in 'fill' cannot broadcast to match "
                         f"the number of channels of the image ({len(fill)} != "
                         f"{state.channels})")


def _center(cls, center):
    """torchvision's _check_sequence_input(center, "center", req_sizes=(2,)) of the classes:
    the op args' {"center": [x, y]} in pixels (origin top-left), {} for the image centre."""
    if center is None:
        return {}
    if not isinstance(center, Sequence):
        raise TypeError(f"{cls}: center should be a sequence of length 2, got "
                        f"{_type_name(center)} {_cut(repr(center))}")
    if len(center) != 2:
        raise ValueError(f"{cls}: center should be sequence of length 2, got "
                         f"{_cut(repr(center))}")
    _numbers(cls, "center", center)
    return {"center": [center[0], center[1]]}


class RandomAffine(Transform):
    op = "random_affine"
    _grid_fill = True

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        centre = _center("RandomAffine", center)
        degrees = _str_angle(degrees)
        shear = _str_angle(shear, (2, 4))
        _check_angle("RandomAffine", "degrees", degrees)
        _check_affine_ranges(translate, scale)
        _check_fill("RandomAffine", fill)
        if shear is not None:
            _check_angle("RandomAffine", "shear", shear, (2, 4))
        super().__init__(degrees=_seq(degrees), translate=_seq(translate), scale=_seq(scale),
                         shear=_seq(shear),
                         interpolation=_interpolation("RandomAffine", interpolation),
                         fill=_seq(fill), _raw_fill=fill, **centre)

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size, *, generator=None):
        """torchvision's: (angle, (tx, ty), scale, (shear_x, shear_y)); img_size is
        [width, height]."""
        angle = _uniform(float(degrees[0]), float(degrees[1]), generator)
        if translate is not None:
            max_dx = float(translate[0] * img_size[0])
            max_dy = float(translate[1] * img_size[1])
            tx = int(round(_uniform(-max_dx, max_dx, generator)))
            ty = int(round(_uniform(-max_dy, max_dy, generator)))
        else:
            tx = ty = 0
        scale = 1.0 if scale_ranges is None else _uniform(scale_ranges[0], scale_ranges[1],
                                                          generator)
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1], generator)
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3], generator)
        return angle, (tx, ty), scale, (shear_x, shear_y)

    def _draw(self, state, generator):
        _pil_fill(state, "RandomAffine", self._args["fill"])
        degrees = _symmetric(self._args["degrees"])
        shear = self._args["shear"]
        if shear is not None:
            shear = _symmetric(shear) if isinstance(shear, numbers.Number) else [
                float(v) for v in shear]
        angle, (tx, ty), scale, (sx, sy) = self.get_params(
            degrees, self._args["translate"], self._args["scale"], shear, state.size(),
            generator=generator)
        _tensor_grid(state.kind, self._args["interpolation"])
        return [angle, tx, ty, scale, sx, sy]


class RandomRotation(Transform):
    op = "random_rotation"
    _grid_fill = True

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False,
                 center=None, fill=0):
        centre = _center("RandomRotation", center)
        degrees = _str_angle(degrees)
        _check_angle("RandomRotation", "degrees", degrees)
        _check_fill("RandomRotation", fill)
        # torchvision hands expand to PIL's rotate, which reads its truth value.
        super().__init__(degrees=_seq(degrees),
                         interpolation=_interpolation("RandomRotation", interpolation),
                         expand=bool(expand), fill=_seq(fill), _raw_fill=fill, **centre)

    @staticmethod
    def get_params(degrees, *, generator=None):
        """torchvision's: the angle, uniform in degrees."""
        return float(_uniform(float(degrees[0]), float(degrees[1]), generator))

    def _draw(self, state, generator):
        _pil_fill(state, "RandomRotation", self._args["fill"])
        angle = self.get_params(_symmetric(self._args["degrees"]), generator=generator)
        _tensor_grid(state.kind, self._args["interpolation"])
        return [angle]


class RandomPerspective(Transform):
    op = "random_perspective"
    _grid_fill = True
    _draws_p = True

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        _check_fill("RandomPerspective", fill)
        super().__init__(distortion_scale=distortion_scale, p=p,
                         interpolation=_interpolation("RandomPerspective", interpolation),
                         fill=_seq(0 if fill is None else fill),
                         _raw_fill=fill)

    @staticmethod
    def get_params(width, height, distortion_scale, *, generator=None):
        """torchvision's: (startpoints, endpoints), each [top-left, top-right,
        bottom-right, bottom-left] as [x, y]."""
        half_h, half_w = height // 2, width // 2
        dx, dy = int(distortion_scale * half_w), int(distortion_scale * half_h)
        g = generator
        topleft = [_randint(0, dx + 1, g), _randint(0, dy + 1, g)]
        topright = [_randint(width - dx - 1, width, g), _randint(0, dy + 1, g)]
        botright = [_randint(width - dx - 1, width, g), _randint(height - dy - 1, height, g)]
        botleft = [_randint(0, dx + 1, g), _randint(height - dy - 1, height, g)]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, [topleft, topright, botright, botleft]

    def _draw(self, state, generator):
        w, h = state.size()
        _, end = self.get_params(w, h, self._args["distortion_scale"], generator=generator)
        _tensor_grid(state.kind, self._args["interpolation"])
        _pil_fill(state, "RandomPerspective", self._args["fill"])
        params = [v for point in end for v in point]
        start = [[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
        coeffs = _perspective_solution(start, end)
        if coeffs is not None:  # torchvision's map: end, start and its coefficients.
            params += [v for point in start for v in point] + coeffs
        return params


def _perspective_solution(start, end):
    """torchvision's _get_perspective_coeffs: the map from end to start points ([[x, y]] *
    4) by torch's float32 least squares (driver gels) on the same matrix, its 8 values as
    floats; None where it raises or is not finite (points equal or three in a line).
    The native op solves in double, which differs where the map is ill-conditioned (a
    distortion_scale of 1 or more often draws one): eager calls hand it torch's."""
    torch = _torch()
    import numpy as np
    from flowloader._float import _perspective_system  # numpy's, loaded on first use.
    a, b = _perspective_system(start, end)
    try:
        out = torch.linalg.lstsq(torch.from_numpy(a.astype(np.float32)),
                                 torch.from_numpy(b.astype(np.float32)),
                                 driver="gels").solution.tolist()
    except RuntimeError:  # torch.linalg.LinAlgError is one.
        return None
    return out if all(math.isfinite(v) for v in out) else None


def _tensor_grid(kind, mode):
    """torchvision's tensor rotate, affine and perspective take NEAREST and BILINEAR only
    (_assert_grid_transform_inputs): another mode on a tensor is its ValueError, after the
    draws (PIL images take BICUBIC)."""
    if kind == "tensor" and mode not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{mode}' is unsupported with Tensor input "
                         "(torchvision's tensor rotate, affine and perspective take NEAREST "
                         "and BILINEAR)")


def _sides(padding):
    """torchvision's padding as [left, top, right, bottom]: a number for all four, (x, y)
    for left/right and top/bottom, or the four."""
    p = [padding] if isinstance(padding, numbers.Number) else list(padding)
    return p * 4 if len(p) == 1 else [p[0], p[1], p[0], p[1]] if len(p) == 2 else p


def _tensor_pad(kind, w, h, padding, mode):
    """torchvision's tensor pad: reflect needs each side's padding below the image's size
    on that axis (torch's reflection pad), symmetric at most that size (its own index
    gather); a PIL image (numpy's pad) takes any. A wider one on a tensor is refused, as
    torchvision's fails (RuntimeError, IndexError)."""
    if kind != "tensor" or mode not in ("reflect", "symmetric") or padding is None:
        return
    p = _sides(padding)
    x, y = max(int(p[0]), int(p[2])), max(int(p[1]), int(p[3]))
    limit_w, limit_h = (w - 1, h - 1) if mode == "reflect" else (w, h)
    if x > limit_w or y > limit_h:
        raise ValueError(f"padding {_cut(list(p))} in {mode} mode is wider than the {w}x{h} "
                         f"tensor image: torchvision's tensor pad takes at most {limit_w} "
                         f"a side horizontally and {limit_h} vertically")


def _uint8_tensor(state):
    """state.kind, "float" for a float tensor: float tensors run torchvision's tensor
    kernels in _float.py, which make these checks themselves; uint8 tensors ("tensor")
    take PIL's pixels, so the checks torchvision makes on tensors are made here."""
    return "float" if state.kind == "tensor" and state.is_float else state.kind


def _tensor_resize(kind, mode):
    """torchvision's tensor resize is torch's interpolate: BOX, HAMMING and LANCZOS (PIL's
    filters, which PIL images take) are its NotImplementedError on a tensor."""
    if kind == "tensor" and mode in _RESIZE_ONLY:
        raise _TorchNotImplementedError(
            f"interpolation {mode.upper()} is unsupported with Tensor input: torchvision "
            "resizes tensors with NEAREST, BILINEAR or BICUBIC (PIL images take it)")


def _bool_first(value, lengths):
    """value as given when it is a sequence of one of `lengths` whose first item is a bool
    (the height torchvision hands torch's interpolate as it is), else None."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return None
    value = list(value)
    return value if len(value) in lengths and isinstance(value[0], bool) else None


def _tensor_bool_size(cls, kind, given):
    """torchvision resizes a tensor to a size of two as given, and torch's interpolate
    refuses a size list that starts with a bool (a TypeError; torchvision's check for an
    unchanged size compares a tuple with that list, never equal). A PIL image takes it
    (True is 1)."""
    if kind == "tensor" and given is not None:
        raise TypeError(f"{cls}: size {_cut(given)} starts with a bool, which torch's "
                        "interpolate refuses for a tensor (as torchvision): give ints")


def _tensor_padding(kind, raw_padding):
    """torchvision's tensor pad takes a Python int, tuple or list as padding ("Got
    inappropriate padding arg", a TypeError, for a numpy int; a PIL image takes one)."""
    if kind in ("tensor", "float") and raw_padding is not None and not isinstance(
            raw_padding, (int, tuple, list)):
        raise TypeError(f"Got inappropriate padding arg {_cut(repr(raw_padding))}: "
                        "torchvision's tensor pad takes an int, a tuple or a list")


def _pil_float_pad(kind, cls, size, w, h):
    """F.center_crop pads a PIL image by (crop - side) // 2 first when the crop is larger:
    a float size makes float paddings, PIL's TypeError ('float' object cannot be
    interpreted as an integer)."""
    if kind in ("pil", "numpy") and isinstance(size, (list, tuple)) and any(
            isinstance(v, float) for v in size):
        th, tw = (size[0], size[0]) if len(size) == 1 else (size[0], size[1])
        if th > h or tw > w:
            raise TypeError(f"{cls}: size {_cut(repr(size))} holds a float and is larger "
                            f"than the {w}x{h} image: its padding would be floats (PIL's "
                            "TypeError)")


def _tensor_int_size(kind, cls, size):
    """A tensor's crops slice (and pad) with the size's values: a float in a size
    sequence is torchvision's TypeError there (a PIL image's crop rounds it)."""
    if kind in ("tensor", "float") and isinstance(size, (list, tuple)) and any(
            isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral) for v in size):
        raise TypeError(f"{cls}: size {_cut(repr(size))} holds a float: a tensor's crop "
                        "slices with ints (torchvision's TypeError)")


def _tensor_fill(kind, fill, raw_type=None, constant=True):
    """torchvision's tensor pad takes one number as fill (TypeError "Got inappropriate fill
    arg" for a sequence, or a numpy int scalar: `raw_type`, the class's given fill's type
    name); a PIL image takes a colour. On a uint8 tensor torch's constant pad takes a
    value in [0, 255] only (its RuntimeError "value cannot be converted to type uint8_t
    without overflow" for -1, 255.5 or NaN; 2.7 is 2)."""
    if kind not in ("tensor", "float"):
        return
    if not isinstance(fill, (int, float)) or raw_type is not None:
        shown = f"{raw_type}({fill!r})" if raw_type is not None else repr(fill)
        raise TypeError(f"Got inappropriate fill arg {_cut(shown)}: torchvision's tensor "
                        "pad takes one number (a Python int or float)")
    if constant and kind == "tensor" and not 0 <= fill <= 255:
        raise RuntimeError(f"pad: fill {_cut(repr(fill))} cannot be converted to type uint8_t "
                           "without overflow (torch's constant pad of a uint8 tensor takes "
                           "[0, 255])")


def _solarize_bound(kind, threshold):
    """torchvision's uint8 tensor solarize: a threshold above 255 is its TypeError; a PIL
    image takes any (float tensors: _float.py)."""
    if kind == "tensor" and isinstance(threshold, numbers.Real) and threshold > 255:
        raise TypeError(f"Threshold should be less than bound of img: {_cut(threshold)} > "
                        "255")


def _tensor_threshold(kind, threshold):
    """A solarize threshold as torchvision's uint8 tensor compares with it: `img >=
    threshold` casts an integer to uint8 (modular: -1 is 255, -300 is 212), where a float
    promotes the pixels (-0.5 inverts all); PIL images and float tensors take it as is."""
    integer = isinstance(threshold, numbers.Integral) or (
        getattr(threshold, "ndim", None) == 0 and "int" in str(getattr(threshold, "dtype", "")))
    if kind == "tensor" and integer and not isinstance(threshold, bool) and int(threshold) < 0:
        return int(threshold) % 256
    return threshold


def _pil_bits(kind, bits):
    """PIL's posterize takes an int number of bits (its `~` of a float is a TypeError);
    tensors take a float."""
    if kind == "pil" and not isinstance(bits, numbers.Integral):
        raise TypeError(f"posterize: bits must be an int on a PIL image, got "
                        f"{_cut(repr(bits))}")


def _tensor_blur(w, h, kernel_size):
    """torchvision's gaussian_blur pads by half the kernel in reflect mode (PIL images too,
    as tensors): a kernel whose half is not below the image's side is its RuntimeError."""
    kx, ky = (kernel_size, kernel_size) if isinstance(kernel_size, numbers.Number) else (
        (kernel_size[0], kernel_size[0]) if len(kernel_size) == 1 else kernel_size[:2])
    if int(kx) // 2 >= w or int(ky) // 2 >= h:
        raise _TorchRuntimeError(f"gaussian_blur: kernel_size {_cut([kx, ky])} is too large for a "
                         f"{w}x{h} image (torchvision's reflect padding of half the kernel "
                         "must be smaller than the image): lower kernel_size")


def _symmetric(value):
    """torchvision's degrees/shear: a number d is [-d, d]; a sequence its two values."""
    if isinstance(value, numbers.Number):
        return [-float(value), float(value)]
    value = list(value)
    return [-float(value[0]), float(value[0])] if len(value) == 1 else [float(v) for v in value]


# -- colour --------------------------------------------------------------------------------
def _check_jitter(name, value, center, bound, clip_first_on_zero):
    """torchvision's ColorJitter._check_input, its checks only (the op takes the value as
    given): a number >= 0 or a list/tuple of two within `bound`; anything else its
    TypeError (a str of '3' was an IndexError in the draw)."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"ColorJitter: if {name} is a single number, it must be non "
                             f"negative, got {_cut(repr(value))}")
        value = [center - float(value), center + float(value)]
        if clip_first_on_zero:
            value[0] = max(value[0], 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        _numbers("ColorJitter", name, value)
        value = [float(value[0]), float(value[1])]
    else:
        raise TypeError(f"ColorJitter: {name} should be a single number or a list/tuple with "
                        f"length 2, got {_type_name(value)} {_cut(repr(value))}")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ValueError(f"ColorJitter: {name} values should be between {bound}, got "
                         f"{_cut(repr(value))}")


class ColorJitter(Transform):
    op = "color_jitter"

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        for name, value in (("brightness", brightness), ("contrast", contrast),
                            ("saturation", saturation)):
            _check_jitter(name, value, 1.0, (0, float("inf")), True)
        _check_jitter("hue", hue, 0.0, (-0.5, 0.5), False)
        super().__init__(brightness=_seq(brightness), contrast=_seq(contrast),
                         saturation=_seq(saturation), hue=_seq(hue))

    @staticmethod
    def get_params(brightness, contrast, saturation, hue, *, generator=None):
        """torchvision's: (fn_idx, brightness, contrast, saturation, hue factors), a None
        range giving None."""
        fn_idx = _torch().randperm(4, generator=generator)
        factors = [None if r is None else float(_uniform(r[0], r[1], generator))
                   for r in (brightness, contrast, saturation, hue)]
        return (fn_idx, *factors)

    def _ranges(self):
        """torchvision's _check_input: each argument as [min, max], or None (no change)."""
        out = []
        for name in ("brightness", "contrast", "saturation", "hue"):
            value, center = self._args[name], 0.0 if name == "hue" else 1.0
            if isinstance(value, numbers.Number):
                value = [center - value, center + value]
                if name != "hue":
                    value[0] = max(value[0], 0.0)
            value = [float(v) for v in value]
            out.append(None if value[0] == value[1] == center else value)
        return out

    def _draw(self, state, generator):
        fn_idx, *factors = self.get_params(*self._ranges(), generator=generator)
        return fn_idx.tolist() + [float("nan") if f is None else f for f in factors]


class Grayscale(Transform):
    """The native grayscale op. Grayscale(1) (torchvision's default) is one channel: a PIL
    image in mode L eagerly, a one-channel view in the loader ([1, H, W] after ToTensor
    and a Normalize with one mean and std; a three-value Normalize broadcasts it to three,
    as torch does; [H, W, 1] uint8 without ToTensor)."""
    op = "grayscale"

    def __init__(self, num_output_channels=1):
        if num_output_channels not in (1, 3):
            raise ValueError("num_output_channels should be either 1 or 3")
        super().__init__()
        self.num_output_channels = num_output_channels

    def _items(self):
        return [(self.op, {"num_output_channels": self.num_output_channels})]

    def _native(self, state=None):
        if "_native_op" not in self.__dict__:
            from flowloader import _flowloader
            self._native_op = _flowloader._EagerOp("grayscale()")
        return self._native_op

    def _eager(self, state, generator):
        state.native(self._native(), [])
        # torchvision's tensor kernel expands to the input's shape: a one-channel tensor
        # stays one channel (a PIL L image becomes RGB).
        if state.kind == "pil" or self.num_output_channels == 1:
            state.channels = self.num_output_channels

    def __repr__(self):
        return f"Grayscale(num_output_channels={self.num_output_channels})"


class RandomGrayscale(Transform):
    op = "random_grayscale"
    _draws_p = True

    def __init__(self, p=0.1):
        super().__init__(p=p)


def _check_blur(kernel_size, sigma):
    """GaussianBlur's constructor checks, torchvision's: each kernel side odd and > 0, sigma
    a number > 0 or a (min, max) with 0 < min <= max (a float kernel side that passes is
    its call's TypeError, _int_args)."""
    for side in kernel_size if isinstance(kernel_size, list) else [kernel_size]:
        if side <= 0 or side % 2 == 0:
            raise ValueError(f"GaussianBlur: kernel size value should be an odd and positive "
                             f"number, got {_cut(repr(kernel_size))}")
    if isinstance(sigma, numbers.Number):
        if sigma <= 0:
            raise ValueError(f"GaussianBlur: if sigma is a single number, it must be "
                             f"positive, got {_cut(repr(sigma))}")
    elif isinstance(sigma, Sequence) and len(sigma) == 2:
        _numbers("GaussianBlur", "sigma", sigma)
        if not 0.0 < sigma[0] <= sigma[1]:
            raise ValueError(f"GaussianBlur: sigma values should be positive and of the form "
                             f"(min, max), got {_cut(repr(sigma))}")
    else:
        raise ValueError(f"GaussianBlur: sigma should be a single number or a list/tuple with "
                         f"length 2, got {_type_name(sigma)} {_cut(repr(sigma))}")


class GaussianBlur(Transform):
    op = "gaussian_blur"
    _int_args = ("kernel_size",)  # torch.linspace's steps.

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        if isinstance(sigma, str) and len(sigma) != 2:  # A sequence of its length there.
            raise ValueError(f"GaussianBlur: sigma should be a single number or a list/tuple "
                             f"with length 2, got {_cut(repr(sigma))}")
        _not_text("GaussianBlur", "sigma", sigma)  # A str is a sequence of its length there.
        if isinstance(kernel_size, numbers.Number):
            kernel_size = int(kernel_size)  # torchvision's _setup_size: 3.5 is 3.
        else:
            kernel_size = _setup_size("GaussianBlur", kernel_size)
        _check_blur(kernel_size, sigma)
        super().__init__(kernel_size=_seq(kernel_size), sigma=_seq(sigma))

    @staticmethod
    def get_params(sigma_min, sigma_max, *, generator=None):
        """torchvision's: sigma, uniform in [sigma_min, sigma_max]."""
        return _uniform(sigma_min, sigma_max, generator)

    def _draw(self, state, generator):
        sigma = self._args["sigma"]
        lo, hi = (sigma, sigma) if isinstance(sigma, numbers.Number) else (
            (sigma[0], sigma[0]) if len(sigma) == 1 else sigma)
        drawn = self.get_params(float(lo), float(hi), generator=generator)
        _tensor_blur(*state.size(), self._args["kernel_size"])
        return [drawn]


class PILGaussianBlur(Transform):
    """Not a torchvision class: PIL's ImageFilter.GaussianBlur(radius) with the radius
    drawn uniformly from [radius_min, radius_max], applied with probability p, as DINO's
    utils.GaussianBlur(p, radius_min, radius_max) (and MoCo v3's GaussianBlur inside a
    RandomApply). The same bytes as upstream's class; op pil_gaussian_blur."""
    op = "pil_gaussian_blur"

    _draws_p = True  # As torch.rand(1) < p (DINO draws Python's random.random() <= p).

    def __init__(self, p=0.5, radius_min=0.1, radius_max=2.0):
        super().__init__(radius=[radius_min, radius_max], p=p)

    def _draw(self, state, generator):
        return [_uniform(*self._args["radius"], generator)]


class RandomSolarize(Transform):
    op = "random_solarize"
    _draws_p = True

    def __init__(self, threshold, p=0.5):
        if getattr(threshold, "ndim", None) == 0 and hasattr(threshold, "item"):
            threshold = threshold.item()  # A 0-d tensor or numpy value: torch compares it.
        # (A str is refused at the call its coin applies, as torchvision's: _eager.)
        super().__init__(threshold=threshold, p=p)

    def _native(self, state=None):
        # A uint8 tensor's negative integer threshold wraps (_tensor_threshold).
        op = super()._native(state)
        t = self._args["threshold"]
        wrapped = _tensor_threshold(_uint8_tensor(state), t) if state is not None else t
        if wrapped is t:
            return op
        ops = self.__dict__.setdefault("_packed_ops", {})
        if ("threshold", wrapped) not in ops:
            from flowloader import _flowloader
            ops[("threshold", wrapped)] = _flowloader._EagerOp(_op_text(
                self.op, dict(self._args, threshold=wrapped)))
        return ops[("threshold", wrapped)]

    def _draw(self, state, generator):  # After the coin, as torchvision's F call.
        _solarize_bound(_uint8_tensor(state), self._args["threshold"])
        return []


class RandomPosterize(Transform):
    op = "random_posterize"
    _draws_p = True

    def __init__(self, bits, p=0.5):
        super().__init__(bits=bits, p=p)  # (A str: refused where its coin applies.)

    def _draw(self, state, generator):  # After the coin, as torchvision's F call.
        _pil_bits(state.kind, self._args["bits"])
        return []


class RandomEqualize(Transform):
    op = "random_equalize"
    _draws_p = True

    def __init__(self, p=0.5):
        super().__init__(p=p)


class RandomAutocontrast(Transform):
    op = "random_autocontrast"
    _draws_p = True

    def __init__(self, p=0.5):
        super().__init__(p=p)


class RandomInvert(Transform):
    op = "random_invert"
    _draws_p = True

    def __init__(self, p=0.5):
        super().__init__(p=p)


class RandomAdjustSharpness(Transform):
    op = "random_adjust_sharpness"
    _draws_p = True

    def __init__(self, sharpness_factor, p=0.5):
        # (A str is refused at the call its coin applies, as torchvision's: _eager.)
        super().__init__(sharpness_factor=sharpness_factor, p=p)

    def _draw(self, state, generator):  # After the coin, where F.adjust_sharpness runs.
        factor = self._args["sharpness_factor"]
        if state.kind == "tensor" and isinstance(factor, numbers.Real) and factor < 0:
            # Its tensor kernel's check (a PIL image extrapolates, as the op does).
            raise ValueError(f"sharpness_factor ({factor}) is not non-negative.")
        return []


# -- augment policies -------------------------------------------------------------------
# torchvision's RandAugment / TrivialAugmentWide op spaces, in their order (14 ops): which
# ops take a magnitude (all but Identity, AutoContrast, Equalize) and which are signed.
_POLICY_OPS = 14
_POLICY_UNSIGNED_OR_FLAT = {0, 10, 11, 12, 13}
_POLICY_FLAT = {0, 12, 13}
_POLICY_GEOMETRIC = {1, 2, 3, 4, 5}  # ShearX, ShearY, TranslateX, TranslateY, Rotate.
class TrivialAugmentWide(Transform):
    op = "trivial_augment_wide"
    _grid_fill = _fill_at_draw = True
    _int_args = ("num_magnitude_bins",)  # torch.linspace's steps.
    _no_bool_args = ("num_magnitude_bins",)

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__(num_magnitude_bins=num_magnitude_bins,
                         interpolation=_interpolation("TrivialAugmentWide", interpolation),
                         fill=_seq(fill), _raw_fill=fill)

    def _draw(self, state, generator):
        # forward(): op_index, a bin if the op has magnitudes, a sign if it is signed.
        op = _randint(0, _POLICY_OPS, generator)
        bins = int(self._args["num_magnitude_bins"])
        bin_ = 0 if op in _POLICY_FLAT else _randint(0, bins, generator)
        negate = 0 if op in _POLICY_UNSIGNED_OR_FLAT else _randint(0, 2, generator)
        if op in _POLICY_GEOMETRIC:  # Its F.affine / F.rotate.
            _tensor_grid(state.kind, self._args["interpolation"])
            _policy_fill(state, type(self).__name__, self._args["fill"])
            self._raise_fill_error()
        return [op, bin_, negate]


class RandAugment(Transform):
    op = "rand_augment"
    _grid_fill = _fill_at_draw = True
    _int_args = ("num_ops", "num_magnitude_bins")  # range() and torch.linspace's steps.
    _no_bool_args = ("num_magnitude_bins",)

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        if isinstance(magnitude, numbers.Number) and not isinstance(magnitude, numbers.Integral):
            # torchvision indexes magnitudes[magnitude]: an IndexError for 9.5.
            raise TypeError(f"RandAugment: magnitude must be an int (an index into the "
                            f"magnitude bins), got {_cut(repr(magnitude))}")
        if isinstance(num_ops, numbers.Integral) and num_ops < 0:
            num_ops = 0  # torchvision's range(num_ops): no op drawn, the image as it is.
        super().__init__(num_ops=num_ops, magnitude=magnitude,
                         num_magnitude_bins=num_magnitude_bins,
                         interpolation=_interpolation("RandAugment", interpolation),
                         fill=_seq(fill), _raw_fill=fill)

    def _draw(self, state, generator):
        # forward(), per sub-op: op_index, then a sign if signed; (op, level, negate,
        # applied) as the native op reads them.
        params = []
        level = float(self._args["magnitude"])
        if level < 0:  # torchvision's magnitudes[magnitude]: a negative index from the end.
            level += int(self._args["num_magnitude_bins"])
        for _ in range(int(self._args["num_ops"])):
            op = _randint(0, _POLICY_OPS, generator)
            negate = 0 if op in _POLICY_UNSIGNED_OR_FLAT else _randint(0, 2, generator)
            if op in _POLICY_GEOMETRIC:  # Its F.affine / F.rotate.
                _tensor_grid(state.kind, self._args["interpolation"])
                _policy_fill(state, type(self).__name__, self._args["fill"])
                self._raise_fill_error()
            params += [op, level, negate, 1]
        return params


class AutoAugment(Transform):
    op = "auto_augment"
    _grid_fill = _fill_at_draw = True

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        name = getattr(policy, "value", policy)
        if isinstance(policy, str) or name not in ("imagenet", "cifar10", "svhn"):
            # torchvision compares with its three policies: anything else (a name, a
            # number) is its ValueError.
            raise ValueError(f"AutoAugment: the provided policy {_cut(repr(policy))} is not "
                             "recognized (AutoAugmentPolicy.IMAGENET, CIFAR10 or SVHN)")
        super().__init__(policy=name, interpolation=_interpolation("AutoAugment", interpolation),
                         fill=_seq(fill), _raw_fill=fill)

    @staticmethod
    def get_params(transform_num, *, generator=None):
        """torchvision's: (policy_id, probs, signs)."""
        torch = _torch()
        policy_id = _randint(0, transform_num, generator)
        probs = torch.rand((2,), generator=generator)
        signs = torch.randint(2, (2,), generator=generator)
        return policy_id, probs, signs

    def _draw(self, state, generator):
        policy_id, probs, signs = self.get_params(25, generator=generator)  # 25 per policy.
        for i in range(2):
            p = _AUTO_AUGMENT_GEOMETRIC[self._args["policy"]].get((policy_id, i))
            if p is not None and bool(probs[i] <= p):  # Its F.affine / F.rotate runs.
                _tensor_grid(state.kind, self._args["interpolation"])
                _policy_fill(state, "AutoAugment", self._args["fill"])
                self._raise_fill_error()
        return [policy_id, probs[0].item(), probs[1].item(), signs[0].item(), signs[1].item()]


# AutoAugment's geometric sub-ops (ShearX/Y, TranslateX/Y, Rotate), torchvision 0.14's
# _get_policies: {(sub-policy, slot): its probability}, by policy.
_AUTO_AUGMENT_GEOMETRIC = {
    "imagenet": {(0, 1): 0.6, (5, 1): 0.8, (8, 0): 0.2, (10, 0): 0.8, (11, 0): 0.4,
                 (15, 0): 0.8, (18, 0): 0.6},
    "cifar10": {(1, 0): 0.7, (1, 1): 0.3, (3, 0): 0.5, (3, 1): 0.7, (5, 0): 0.2,
                (10, 1): 0.5, (12, 0): 0.4, (21, 0): 0.9, (21, 1): 0.7, (24, 0): 0.7},
    "svhn": {(0, 0): 0.9, (1, 0): 0.9, (4, 1): 0.9, (5, 0): 0.9, (6, 0): 0.9, (7, 0): 0.9,
             (9, 1): 0.9, (10, 0): 0.9, (11, 0): 0.8, (12, 1): 0.6, (14, 1): 0.8,
             (15, 1): 0.0, (16, 0): 0.7, (17, 1): 0.8, (18, 0): 0.3, (18, 1): 0.9,
             (19, 0): 0.1, (20, 1): 0.6, (21, 0): 0.8, (22, 0): 0.7, (22, 1): 0.8,
             (23, 0): 0.8, (24, 0): 0.7},
}


class AugMix(Transform):
    """torchvision's AugMix: the native aug_mix op (the policies' PIL sub-ops; torchvision
    runs its tensor kernels, a level or so apart per sub-op)."""
    op = "aug_mix"
    # torch.randint's bound, list repetition and range().
    _int_args = ("severity", "mixture_width", "chain_depth")
    _no_bool_args = ("severity",)  # torch.randint's high.
    _grid_fill = _grid_fill_pil = True

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        if not (1 <= severity <= 10):
            raise ValueError(f"The severity must be between [1, 10]. Got {severity} instead.")
        if not isinstance(alpha, numbers.Real):  # float("x" * 10**6) quoted it whole.
            raise (_StrValueError if isinstance(alpha, str) else TypeError)(
                f"AugMix: alpha must be a number, got {_cut(repr(alpha))}")
        super().__init__(severity=severity, mixture_width=mixture_width,
                         chain_depth=chain_depth, alpha=float(alpha), all_ops=bool(all_ops),
                         interpolation=_interpolation("AugMix", interpolation),
                         fill=_seq(fill))  # (Its PIL image runs as a tensor: not packed.)
        if _packed_fill(fill) is not None:  # A numpy int scalar: refused on a tensor.
            self._raw_fill_type = type(fill).__name__
        self._int_alpha = isinstance(alpha, numbers.Integral)  # (_items refuses it.)

    def _items(self):
        # The loader's images are RGB PIL images, which AugMix runs as uint8 tensors: the
        # fill's levels are torch's cast of it (_grid_fill_levels).
        (name, args), = super()._items()
        if args.get("fill") is not None:
            args["fill"] = _grid_fill_levels("AugMix", args["fill"], 3)
        if self.__dict__.get("_int_alpha"):
            raise _TorchRuntimeError(
                f"AugMix: alpha {args['alpha']:g} is an int: torchvision's torch.tensor([alpha, "
                "alpha]) is then Long, which its Dirichlet draw refuses (\"dirichlet\" not "
                "implemented for 'Long'); give a float")
        return [(name, args)]

    def _draw(self, state, generator):
        # forward()'s order: the Beta weight (a 2-Dirichlet), the chains' Dirichlet
        # weights, then per chain its depth and per sub-op op, bin and sign.
        torch = _torch()
        a = self._args
        width, depth, severity = int(a["mixture_width"]), int(a["chain_depth"]), int(
            a["severity"])
        m = torch._sample_dirichlet(torch.tensor([a["alpha"]] * 2), generator=generator)
        w = torch._sample_dirichlet(torch.tensor([a["alpha"]] * width), generator=generator)
        params = m.tolist() + w.tolist()
        n_ops = 13 if a["all_ops"] else 9
        for _ in range(width):
            d = depth if depth > 0 else _randint(1, 4, generator)
            params.append(d)
            for _ in range(d):
                op = _randint(0, n_ops, generator)
                b = 0 if op in (7, 8) else _randint(0, severity, generator)
                negate = _randint(0, 2, generator) if op not in (5, 6, 7, 8) else 0
                params += [op, b, negate]
        return params


class ElasticTransform(Transform):
    """torchvision's ElasticTransform: the native elastic_transform op, given the two
    torch.rand planes torchvision's get_params draws (the same field, blurred natively)."""
    op = "elastic_transform"
    _pil_int_fill = False  # A float fill, cast as torch casts (the op's own check).

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        def pair(name, value):
            # torchvision's checks: a float or a Sequence (a str is one, of its length) of
            # two floats (an int in it is its TypeError).
            if not isinstance(value, (float, Sequence)):
                raise TypeError(f"{name} should be float or a sequence of floats. "
                                f"Got {type(value)}")
            if not isinstance(value, float) and len(value) != 2:
                raise ValueError(f"If {name} is a sequence its length should be 2. "
                                 f"Got {len(value)}")
            value = [value] if isinstance(value, float) else list(value)
            for element in value:
                if not isinstance(element, float):
                    raise TypeError(f"ElasticTransform: {name} should be a sequence of floats, "
                                    f"got {_cut(repr(value))} (an item of type "
                                    f"{_type_name(element)})")
            return [float(value[0]), float(value[-1])]
        if not isinstance(fill, (int, float)):
            raise TypeError(f"fill should be int or float. Got {type(fill)}")
        mode = _interpolation("ElasticTransform", interpolation)
        if mode not in ("nearest", "bilinear"):
            _refuse(f"ElasticTransform(interpolation={interpolation!r})",
                    "its grid_sample takes NEAREST and BILINEAR")
        super().__init__(alpha=pair("alpha", alpha), sigma=pair("sigma", sigma),
                         interpolation=mode, fill=fill)

    @staticmethod
    def get_params(alpha, sigma, size, *, generator=None):
        """torchvision's: the displacement [1, H, W, 2] for size [H, W] (its torch.rand
        planes blurred by a reflect-padded conv2d and scaled, in torch, as torchvision's
        get_params and F.gaussian_blur compute them)."""
        torch = _torch()
        import torch.nn.functional as nnf

        def blur(plane, k):
            def kernel1d(s):
                x = torch.linspace(-(k - 1) * 0.5, (k - 1) * 0.5, steps=k)
                pdf = torch.exp(-0.5 * (x / s).pow(2))
                return pdf / pdf.sum()
            kernel = torch.mm(kernel1d(sigma[1])[:, None], kernel1d(sigma[0])[None, :])
            padded = nnf.pad(plane, [k // 2] * 4, mode="reflect")
            return nnf.conv2d(padded, kernel.expand(1, 1, k, k), groups=1)

        out = []
        for axis in range(2):
            d = torch.rand([1, 1] + list(size), generator=generator) * 2 - 1
            if sigma[axis] > 0.0:
                k = int(8 * sigma[axis] + 1)
                d = blur(d, k + 1 if k % 2 == 0 else k)
            out.append(d * alpha[axis] / size[axis])
        return torch.concat(out, 1).permute([0, 2, 3, 1])

    def _draw(self, state, generator):
        # get_params: torch.rand([1, 1, H, W]) for dx, then for dy.
        torch = _torch()
        w, h = state.size()
        for s in self._args["sigma"]:
            k = int(8 * s + 1) if s > 0 else 0
            k += 1 - k % 2 if k else 0
            if k // 2 >= min(w, h):  # Its F.gaussian_blur of the noise: a reflect pad.
                raise _TorchRuntimeError(
                    f"ElasticTransform: sigma {s} blurs the noise with a {k}x{k} kernel, too "
                    f"large for a {w}x{h} image (torchvision's reflect padding of half the "
                    "kernel must be smaller than each side): lower sigma")
        planes = [torch.rand([1, 1, h, w], generator=generator) for _ in range(2)]
        return torch.cat([p.flatten() for p in planes]).numpy()  # native() lists it.


# -- tensor ops ---------------------------------------------------------------------------
def _check_erasing(p, scale, ratio, value):
    """RandomErasing's constructor checks, torchvision's, in its order (a scale or ratio
    of fewer than two items, its IndexError, is a ValueError here)."""
    if not isinstance(value, (numbers.Number, str, tuple, list)):
        raise TypeError(f"RandomErasing: argument value should be either a number or str or a "
                        f"sequence, got {_type_name(value)} {_cut(repr(value))}")
    if isinstance(value, str) and value != "random":
        raise ValueError(f"RandomErasing: if value is str, it should be 'random', got "
                         f"{_cut(repr(value))}")
    for name, pair in (("scale", scale), ("ratio", ratio)):
        if not isinstance(pair, (tuple, list)):
            raise TypeError(f"RandomErasing: {name} should be a sequence, got "
                            f"{_type_name(pair)} {_cut(repr(pair))}")
        if len(pair) < 2:  # torchvision's scale[1] / ratio[1]: its IndexError.
            raise _TorchIndexError(f"RandomErasing: {name} should be (min, max), got "
                                   f"{_cut(repr(pair))}")
        _numbers("RandomErasing", name, pair)
    if scale[0] < 0 or scale[1] > 1:
        raise ValueError(f"RandomErasing: scale should be between 0 and 1, got "
                         f"{_cut(repr(scale))}")
    if isinstance(p, (str, bytes)) or not _is_number(p):  # torchvision's 0 <= p.
        raise TypeError(f"RandomErasing: p must be a number in [0, 1], got {_cut(repr(p))}")
    if p < 0 or p > 1:  # torchvision's own check.
        raise ValueError(f"Random erasing probability should be between 0 and 1, got {p}")


class RandomErasing(Transform):
    op = "random_erasing"

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        _check_erasing(p, scale, ratio, value)
        super().__init__(p=p, scale=_seq(scale), ratio=_seq(ratio), value=_seq(value),
                         inplace=bool(inplace))

    _draws_p = True

    @staticmethod
    def get_params(img, scale, ratio, value=None, *, generator=None):
        """torchvision's: (top, left, h, w, v) of the erased box, v the value tensor (a
        normal draw per pixel where value is None), or (0, 0, H, W, img) if none fits."""
        torch = _torch()
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        values = []

        def fill(h, w):  # Drawn between the box's size and its corner, as torchvision.
            values.append(torch.empty([img_c, h, w], dtype=torch.float32).normal_(
                generator=generator) if value is None else torch.tensor(value)[:, None, None])
        box = RandomErasing._box(img_w, img_h, scale, ratio, generator, fill)
        if box is None:
            return 0, 0, img_h, img_w, img
        return (*box, values[0])

    @staticmethod
    def _box(img_w, img_h, scale, ratio, generator, fill):
        torch = _torch()
        area = img_h * img_w
        log_ratio = torch.log(torch.tensor(ratio))
        for _ in range(10):
            erase_area = area * _uniform(scale[0], scale[1], generator)
            aspect_ratio = torch.exp(torch.empty(1).uniform_(
                log_ratio[0], log_ratio[1], generator=generator)).item()
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if h < img_h and w < img_w:
                fill(h, w)
                return _randint(0, img_h - h + 1, generator), _randint(0, img_w - w + 1,
                                                                          generator), h, w
        return None

    def _draw(self, state, generator):
        # The box as torchvision draws it; for value='random' the seed of the native op's
        # own noise where torchvision draws its normal_ values.
        w, h = state.size()
        seed = [0]

        def fill(unused_h, unused_w):
            if self._args["value"] == "random":
                seed[0] = _randint(0, 2 ** 53, generator)
        box = self._box(w, h, self._args["scale"], self._args["ratio"], generator, fill)
        return (list(box) if box is not None else [0, 0, h, w]) + seed

    def _eager(self, state, generator):
        if self._args["value"] != "random" or state.kind != "tensor" or not state.is_float:
            return super()._eager(state, generator)
        # value='random' on a float tensor: torchvision's own normal_ draw, of the tensor's
        # channels (the native op's noise is its own), so the pixels and torch's generator
        # stay torchvision's.
        self._native()  # Checks the arguments before the draws read them.
        if not _coin(self._args["p"], generator):
            return
        w, h = state.size()
        torch, values = _torch(), []

        def fill(bh, bw):
            values.append(torch.empty([state.channels, bh, bw], dtype=torch.float32).normal_(
                generator=generator).numpy())
        box = self._box(w, h, self._args["scale"], self._args["ratio"], generator, fill)
        if box is None:
            return
        top, left, bh, bw = box

        def erase(a):
            a = a.copy()
            a[:, top:top + bh, left:left + bw] = values[0]
            return a
        state.map_float(erase)


# -- composition --------------------------------------------------------------------------
class _OpList(list):
    """An op list as one op's argument (compose's, random_choice's, random_order's
    `transforms`): [(name, args)], written `[op(...); op(...)]` in the op text and as a
    list of {name: args} in a spec."""


def _sub_op(owner, t):
    """Transform t as one sub-op item of `owner` (a Compose of several ops: compose)."""
    items = _flatten(t)
    if any(name is None for name, _ in items):
        _refuse(f"{t!r} inside {owner} in the loader", "tensor conversions (ToTensor, "
                "PILToTensor, ConvertImageDtype) go outside it, in the view's Compose")
    if len(items) == 1:
        return items[0]
    return ("compose", {"transforms": _OpList(items)})


class RandomApply(Transform):
    """The transforms applied with probability p: one op takes p as its own `p` (a
    Random* class inside it applies with the product of both); several are the native
    `compose` op with that p (one draw for all, then each its own, as torchvision)."""

    def __init__(self, transforms, p=0.5):
        transforms = list(transforms)
        for t in transforms:
            _check(t)
        self.transforms = transforms
        if getattr(p, "ndim", None) == 0 and hasattr(p, "item"):
            p = p.item()  # A 0-d tensor or numpy p: `p < torch.rand(1)` takes it.
        self.p = p
        self._args = {"p": p}

    def _items(self):
        items = [_sub_op("RandomApply", t) for t in self.transforms]
        if len(items) == 1:
            name, args = items[0]
            args = dict(args)
            # torchvision's coins take any p (1 or more: always, 0 or less: never), so
            # each is clamped to [0, 1] before the product.
            args["p"] = _clamp01(self.p, 1) * _clamp01(args.get("p", 1), 0)
            return [(name, args)]
        # (NaN: `nan < torch.rand(1)` never skips, so always applied.)
        return [("compose", {"transforms": _OpList(items), "p": _clamp01(self.p, 1)})]

    def _eager(self, state, generator):
        # torchvision's forward: `if self.p < torch.rand(1): return img`, then the
        # transforms, each drawing its own p.
        if self.p < _torch().rand(1, generator=generator):
            return
        for t in self.transforms:
            t._eager(state, generator)

    def __repr__(self):
        return f"RandomApply({self.transforms!r}, p={self.p!r})"


def _clamp01(p, nan):
    """A coin's p as the probability it is (torch.rand(1) < p takes any number): `nan`
    for NaN (RandomApply's `p < torch.rand(1)` skips never, a Random* class's `torch.rand(1)
    < p` applies never); a p that is not a number is left for the op's refusal."""
    if isinstance(p, numbers.Real) and not isinstance(p, bool):
        return nan if math.isnan(p) else min(max(p, 0), 1)
    return p


class _EagerOnly(Transform):
    """A class that runs when called on an image, not yet in the loader's op list."""

    def _items(self):
        _refuse(f"{type(self).__name__} in the loader", "it runs when called on an image "
                "(eagerly) only")


class RandomChoice(Transform):
    """One of the transforms, picked as torchvision picks it (Python's `random.choices`
    with weights p; with generator=, torch's draw). In the loader: the native
    random_choice op (its `weights` are p; the sample's stream stands in for Python's
    random)."""

    def __init__(self, transforms, p=None):
        self.transforms = list(transforms)
        for t in self.transforms:
            _check(t)
        if p is not None and not isinstance(p, Sequence):  # (A str is one, as there.)
            raise TypeError("Argument p should be a sequence")
        self.p = p
        self._args = {"p": p}

    def _items(self):
        # torchvision's takes both at construction and fails on its first call: in the
        # loader every sample would fail, so they are refused here.
        if not self.transforms:
            raise ValueError("RandomChoice([]) has no transform to choose from: every sample "
                             "would fail (torchvision's raises IndexError on its first call); "
                             "give it at least one transform")
        self._check_weights()
        args = {"transforms": _OpList(_sub_op("RandomChoice", t) for t in self.transforms)}
        if self.p is not None:
            args["weights"] = [float(w) for w in self.p]
        return [("random_choice", args)]

    def _check_weights(self):
        if self.p is not None and len(self.p) != len(self.transforms):
            raise ValueError(f"RandomChoice: p has {len(self.p)} weights for "
                             f"{len(self.transforms)} transforms; give one weight each")

    def _eager(self, state, generator):
        if not self.transforms:  # torchvision's random.choices([]) fails so.
            raise IndexError("RandomChoice([]): cannot choose from an empty sequence")
        self._check_weights()  # Where random.choices raises its ValueError.
        if generator is None:
            import random
            t = random.choices(self.transforms, weights=self.p)[0]
        else:
            weights = _torch().tensor(self.p if self.p is not None else
                                      [1.0] * len(self.transforms), dtype=_torch().float64)
            t = self.transforms[int(_torch().multinomial(weights, 1, generator=generator))]
        t._eager(state, generator)

    def __repr__(self):
        return f"RandomChoice({self.transforms!r}, p={self.p!r})"


class RandomOrder(Transform):
    """The transforms in a random order (Python's `random.shuffle`, as torchvision; with
    generator=, torch.randperm). In the loader: the native random_order op (the sample's
    stream stands in for Python's random)."""

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for t in self.transforms:
            _check(t)
        self._args = {}

    def _items(self):
        return [("random_order", {"transforms": _OpList(
            _sub_op("RandomOrder", t) for t in self.transforms)})]

    def _eager(self, state, generator):
        if generator is None:
            import random
            order = list(range(len(self.transforms)))
            random.shuffle(order)
        else:
            order = _torch().randperm(len(self.transforms), generator=generator).tolist()
        for i in order:
            self.transforms[i]._eager(state, generator)

    def __repr__(self):
        return f"RandomOrder({self.transforms!r})"


class Pad(Transform):
    """torchvision's Pad (constant, edge, reflect, symmetric): the native pad op."""
    op = "pad"

    def __init__(self, padding, fill=0, padding_mode="constant"):
        # torchvision's order: padding's type, fill's type, then padding_mode.
        if not isinstance(padding, (numbers.Number, tuple, list)):
            raise TypeError(f"Pad: got inappropriate padding arg {_cut(repr(padding))}")
        if not isinstance(fill, (numbers.Number, tuple, list)):  # torchvision's check.
            raise TypeError(f"Pad: got inappropriate fill arg {_type_name(fill)} "
                            f"{_cut(repr(fill))}: a number or a tuple of them")
        if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
            raise ValueError("Padding mode should be either constant, edge, reflect or "
                             "symmetric")
        _padding("Pad", padding)
        super().__init__(padding=_seq(padding), fill=_seq(fill), _raw_fill=fill,
                         padding_mode=padding_mode)
        if not isinstance(padding, (int, tuple, list)):
            self._raw_padding = padding  # A numpy int: a tensor's TypeError (_tensor_padding).

    def _eager(self, state, generator):
        # torchvision's tensor pad checks padding's and fill's types in every mode first.
        kind, mode = _uint8_tensor(state), self._args["padding_mode"]
        _tensor_padding(kind, self.__dict__.get("_raw_padding"))
        _tensor_fill(kind, self._args["fill"], self.__dict__.get("_raw_fill_type"),
                     constant=mode == "constant")
        _tensor_pad(kind, *state.size(), self._args["padding"], mode)
        if mode == "constant":
            _pil_fill(state, "Pad", self._args["fill"])
        super()._eager(state, generator)

    def _items(self):
        # torchvision reads the fill in constant mode only: another mode takes any (the
        # loader's op, which checks it, gets 0).
        (name, args), = super()._items()
        if args["padding_mode"] != "constant":
            args["fill"] = 0
        return [(name, args)]

    def _fill_parsed(self, state):
        return self._args["padding_mode"] == "constant"


class FiveCrop(Transform):
    """The four corner crops and the centre crop, a tuple of 5 images (torchvision's
    order: top-left, top-right, bottom-left, bottom-right, centre). In the loader: the
    five_crop op, whose view is the 5 crops stacked ([B, 5, C, H, W] after ToTensor /
    Normalize, else uint8 [B, 5, H, W, 3]); the transforms after it run on each crop, and
    torchvision's stacking Lambda right after it (torch.stack([ToTensor()(c) for c in
    crops]), or PILToTensor) is that stack (_stacking_lambda)."""
    op = "five_crop"

    def __init__(self, size):
        super().__init__(size=_setup_size("FiveCrop", size))

    def _eager(self, state, generator):
        state.replace(functional.five_crop(state.result(), self._args["size"]))


class TenCrop(Transform):
    """FiveCrop of the image and of its flip (vertical with vertical_flip=True). In the
    loader: the ten_crop op, a view of the 10 crops stacked (as FiveCrop's)."""
    op = "ten_crop"

    def __init__(self, size, vertical_flip=False):
        super().__init__(size=_setup_size("TenCrop", size), vertical_flip=bool(vertical_flip))

    def _eager(self, state, generator):
        state.replace(functional.ten_crop(state.result(), self._args["size"],
                                          self._args["vertical_flip"]))


class ToPILImage(_EagerOnly):
    """A uint8 or float tensor [C, H, W] or HWC array (1 or 3 channels) as a PIL image,
    as torchvision's to_pil_image."""

    def __init__(self, mode=None):
        super().__init__(mode=mode)

    def _eager(self, state, generator):
        state.replace(functional.to_pil_image(state.result(), self._args["mode"]))


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

    def _eager(self, state, generator):
        """Calls the function on the image as it stands (a PIL image stays one, as in
        torchvision); fn(image, rng) gets a numpy Generator seeded from torch's draw.
        A None result keeps the image (the loader's rule)."""
        img = state.result()
        if _wants_rng(self.lambd):
            import numpy as np
            out = self.lambd(img, np.random.default_rng(_randint(0, 2 ** 62, generator)))
        else:
            out = self.lambd(img)
        state.replace(img if out is None else out)

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
        if kind.__module__.split(".")[0] == "torchvision":
            # torchvision's class inside ours: say so, and which class to use instead.
            ours = f"flowloader.transforms.{kind.__name__}" if kind.__name__ in __all__ \
                else "flowloader.transforms"
            raise TypeError(f"flowloader.transforms: {kind.__module__}.{kind.__qualname__} is "
                            f"torchvision's: build it with {ours} instead (the same "
                            "arguments)")
        _refuse(f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins"
                else repr(t))


def _leaves(t):
    """The transforms of t in order, nested Composes opened."""
    if isinstance(t, Compose):
        return [leaf for inner in t.transforms for leaf in _leaves(inner)]
    return [t]


def _flatten(t):
    """t's op items, ToTensor/PILToTensor/ConvertImageDtype kept as (None, marker); a
    Lambda right after FiveCrop/TenCrop that stacks the crops is that conversion's marker
    (_stacking_lambda)."""
    out = []
    leaves = _leaves(t)
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, ConvertImageDtype) and leaf._to_uint8:
            _refuse("ConvertImageDtype(torch.uint8) in the loader", "it runs when called on "
                    "an image (eagerly) only; the loader's ops give uint8 without normalize")
        if isinstance(leaf, ToTensor):
            out.append((None, {"marker": type(leaf).__name__}))
        elif isinstance(leaf, Lambda) and i > 0 and isinstance(leaves[i - 1], (FiveCrop,
                                                                             TenCrop)):
            out.append((None, {"marker": _stacking_lambda(leaves[i - 1], leaf)}))
        else:
            if getattr(leaf, "_no_antialias", False):  # The loader's uint8 images.
                _warn_antialias(None)
            items = leaf._items()
            if getattr(leaf, "_packed_fill", None) is not None:
                # The loader's images are RGB, as ImageFolder's PIL images: a numpy fill
                # is PIL's packed colour there (_packed_fill).
                items = [(name, dict(args, fill=_unpacked(leaf._packed_fill, 3)))
                         for name, args in items]
            out.extend(items)
    return out


def _stacking_lambda(crop, lam):
    """What a Lambda right after FiveCrop/TenCrop is in the loader: torchvision's recipe
    stacks the crops there, `torch.stack([ToTensor()(c) for c in crops])` (or
    PILToTensor), and the loader's view is that stack already, the ops after it running
    on each crop. The Lambda is called once, here, on crops of a small random image; a
    stack of ToTensor's (PILToTensor's) crops makes it that conversion's marker. Any
    other Lambda there is refused: the loader cannot hand it the crops."""
    import numpy as np
    from PIL import Image
    torch = _torch()
    n = 10 if isinstance(crop, TenCrop) else 5
    rng = np.random.default_rng(34)
    crops = tuple(Image.fromarray(rng.integers(0, 256, (3, 4, 3), dtype=np.uint8), "RGB")
                  for _ in range(n))
    name = type(crop).__name__
    why = (f"in the loader a Lambda right after {name} must stack the crops as tensors, "
           f"torch.stack([ToTensor()(c) for c in crops]) (or PILToTensor): the loader's view "
           f"is that stack, [B, {n}, C, H, W], and the transforms after {name} run on each "
           "crop")
    out = None
    if not _wants_rng(lam.lambd):
        try:
            out = lam.lambd(crops)
        except Exception as e:  # noqa: BLE001 -- any failure: not a stacking Lambda.
            why += f" (called on {n} crops it raised {type(e).__name__}: {_cut(e)})"
    if isinstance(out, torch.Tensor) and out.shape == (n, 3, 3, 4):
        pixels = [torch.from_numpy(np.array(c)).permute(2, 0, 1) for c in crops]
        if out.dtype == torch.uint8 and torch.equal(out, torch.stack(pixels)):
            return "PILToTensor"
        if out.dtype == torch.float32 and torch.allclose(
                out, torch.stack(pixels).float() / 255, rtol=0, atol=1e-6):
            return "ToTensor"
    _refuse(f"{lam!r} after {name}", why)


def _tensor_normalize_run(ts, i):
    """How many transforms from ts[i] are a tensor conversion then Normalize (0: none)."""
    kinds = [type(t) for t in ts[i:i + 3]]
    if kinds[:2] == [ToTensor, Normalize] or kinds[:2] == [ConvertImageDtype, Normalize]:
        return 2
    if kinds == [PILToTensor, ConvertImageDtype, Normalize]:
        return 3
    return 0


def _value_text(value):
    """A Python value as the op text writes it (ParseOpValue's forms)."""
    if value is None:
        return "null"
    if isinstance(value, _OpList):
        return "[" + "; ".join(_op_text(n, a) for n, a in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    return str(value)


def _spec_args(args):
    """An op's arguments as a spec writes them (an op list as [{name: args}])."""
    return {k: [{n: _spec_args(a)} for n, a in v] if isinstance(v, _OpList) else v
            for k, v in args.items()}


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
        return "; ".join(_op_text(name, args) for name, args in self.op_items())

    def _eager(self, state, generator):
        # torchvision's forward, transform by transform; ToTensor then Normalize (or
        # PILToTensor, ConvertImageDtype(float), Normalize) on RGB pixels run as the
        # loader's one normalize op, so the bytes are the loader's.
        ts = self.transforms
        i = 0
        while i < len(ts):
            n = _tensor_normalize_run(ts, i)
            first_ok = {ToTensor: state.kind != "tensor", PILToTensor: state.kind == "pil",
                        ConvertImageDtype: state.kind == "tensor"}.get(type(ts[i]), False)
            if n and first_ok and not state.is_float and state.channels == 3:
                state.native(ts[i + n - 1]._native(), [])
                state.kind = "tensor"
                i += n
                continue
            ts[i]._eager(state, generator)
            i += 1

    def to_spec(self):
        """The `ops:` list as a spec writes it: [{name: {arg: value}}]."""
        return [{name: _spec_args(args)} for name, args in self.op_items()]

    def __repr__(self):
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose([{inner}\n])"


# flowloader.transforms.functional (torchvision's F), importable as a submodule.
from flowloader import _functional as functional  # noqa: E402

sys.modules[__name__ + ".functional"] = functional


# -- detection: torchvision v2's detection transforms (references/detection at v0.14) ---
# They move the boxes and masks of DataLoader(annotations=...) with the pixels; colour
# ops leave them. They run in the loader's op list only (calling one on an image alone
# raises TypeError: their draws need the sample's boxes).
__all__ += ["FixedSizeCrop", "RandomIoUCrop", "RandomPhotometricDistort",
            "RandomShortestSize", "RandomZoomOut", "SanitizeBoundingBoxes", "ScaleJitter"]


class _DetectionOp(Transform):
    def __call__(self, img, *args, generator=None):
        raise TypeError(f"flowloader.transforms.{type(self).__name__} runs in the loader's op "
                        "list (DataLoader(annotations=..., transform=Compose([...]))), not on "
                        "an image alone")


def _fill(fill):
    """The detection references' fill: None is black; a number or [r, g, b]."""
    return 0 if fill is None else _seq(fill)


class RandomPhotometricDistort(_DetectionOp):
    """SSD's colour distortion: each adjustment with probability p (boxes unchanged)."""
    op = "random_photometric_distort"

    def __init__(self, contrast=(0.5, 1.5), saturation=(0.5, 1.5), hue=(-0.05, 0.05),
                 brightness=(0.875, 1.125), p=0.5):
        super().__init__(brightness=_seq(brightness), contrast=_seq(contrast),
                         saturation=_seq(saturation), hue=_seq(hue), p=p)


class RandomZoomOut(_DetectionOp):
    """SSD's zoom out: the image on a canvas up to side_range times its size."""
    op = "random_zoom_out"

    def __init__(self, fill=None, side_range=(1.0, 4.0), p=0.5):
        super().__init__(fill=_fill(fill), side_range=_seq(side_range), p=p)


class RandomIoUCrop(_DetectionOp):
    """SSD's crop: overlapping some box by a random minimum IoU."""
    op = "random_iou_crop"

    def __init__(self, min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5,
                 max_aspect_ratio=2.0, sampler_options=None, trials=40):
        args = dict(min_scale=min_scale, max_scale=max_scale, min_aspect_ratio=min_aspect_ratio,
                    max_aspect_ratio=max_aspect_ratio, trials=trials)
        if sampler_options is not None:
            args["sampler_options"] = _seq(sampler_options)
        super().__init__(**args)


class ScaleJitter(_DetectionOp):
    """Large-scale jitter: a random scale of the factor fitting target_size."""
    op = "scale_jitter"

    def __init__(self, target_size, scale_range=(0.1, 2.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=None):
        if antialias not in (None, True):
            _refuse(f"ScaleJitter(antialias={antialias!r})", "PIL images are always antialiased")
        super().__init__(target_size=_size(target_size), scale_range=_seq(scale_range),
                         interpolation=_interpolation("ScaleJitter", interpolation))


class RandomShortestSize(_DetectionOp):
    """Multi-scale training: the shorter side one of min_size, the longer <= max_size."""
    op = "random_shortest_size"

    def __init__(self, min_size, max_size=None, interpolation=InterpolationMode.BILINEAR,
                 antialias=None):
        if antialias not in (None, True):
            _refuse(f"RandomShortestSize(antialias={antialias!r})",
                    "PIL images are always antialiased")
        min_size = [min_size] if isinstance(min_size, numbers.Number) else _seq(min_size)
        super().__init__(min_size=min_size, max_size=16384 if max_size is None else max_size,
                         interpolation=_interpolation("RandomShortestSize", interpolation))


class FixedSizeCrop(_DetectionOp):
    """A random crop of at most size, padded right and bottom to size."""
    op = "fixed_size_crop"

    def __init__(self, size, fill=0, padding_mode="constant"):
        super().__init__(size=_size(size), fill=_fill(fill), padding_mode=padding_mode)


class SanitizeBoundingBoxes(_DetectionOp):
    """Drops boxes smaller than min_size (each side) or min_area, or outside the image,
    with their labels, masks, iscrowd and area. Not an op of the list: the DataLoader
    runs it as the sanitize_bounding_boxes stage after the list (where torchvision's
    detection recipes put it); a Compose may hold it as its last transform."""
    op = "sanitize_bounding_boxes"

    def __init__(self, min_size=1.0, min_area=1.0, labels_getter="default"):
        if labels_getter != "default":
            _refuse(f"SanitizeBoundingBoxes(labels_getter={labels_getter!r})",
                    "the loader's targets are always the annotations' labels")
        super().__init__(min_size=min_size, min_area=min_area)

    def _items(self):
        raise TypeError("flowloader.transforms.SanitizeBoundingBoxes ends a detection "
                        "Compose given to DataLoader(annotations=...): it is the "
                        "sanitize_bounding_boxes stage after the op list, not an op in it")


def _split_sanitize(compose):
    """(compose without a final SanitizeBoundingBoxes, its stage options or None)."""
    if not isinstance(compose, Compose) or not compose.transforms or \
            not isinstance(compose.transforms[-1], SanitizeBoundingBoxes):
        return compose, None
    last = compose.transforms[-1]
    return Compose(compose.transforms[:-1]), dict(last._args)


# -- multi-sample detection ops: batch ops, not ops of a Compose ------------------------
# They make one sample out of several of a batch, so they run on each collated batch:
# DataLoader(annotations=..., batch_ops=[T.Mosaic(), T.SimpleCopyPaste()]) (the `mosaic`
# and `copy_paste` batch stages, docs/specs.md "Multi-sample detection ops").
__all__ += ["Mosaic", "SimpleCopyPaste"]


class _BatchOp:
    """A batch op's description; batch_ops= takes it as {"type": ..., "options": ...}."""
    type = None

    def __init__(self, **options):
        self._options = options

    def to_batch_op(self):
        return {"type": self.type, "options": dict(self._options)}

    def __call__(self, *args, **kwargs):
        raise TypeError(f"flowloader.transforms.{type(self).__name__} runs on the loader's "
                        "batches (DataLoader(annotations=..., batch_ops=[...])), not on an "
                        "image alone")

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return f"{type(self).__name__}({args})"


class Mosaic(_BatchOp):
    """YOLOv5's mosaic (load_mosaic + its border crop): with probability p, a row becomes
    itself and three other rows of its batch around a centre drawn in center_range × the
    side; boxes and masks move and clip with their images, then box_candidates (min_size,
    area_ratio, max_aspect_ratio) filters them. fill: uint8 levels (114), or a normalized
    image's units (default 0)."""
    type = "mosaic"

    def __init__(self, p=1.0, center_range=(0.5, 1.5), fill=None, min_size=2.0,
                 area_ratio=0.1, max_aspect_ratio=100.0):
        lo, hi = _seq(center_range)
        options = dict(p=p, center_min=lo, center_max=hi, min_size=min_size,
                       area_ratio=area_ratio, max_aspect_ratio=max_aspect_ratio)
        if fill is not None:
            options["fill"] = fill
        super().__init__(**options)


class SimpleCopyPaste(_BatchOp):
    """torchvision's detection reference SimpleCopyPaste: row i gets a random subset of
    row i-1's instances (masks and pixels); its own masks are occluded, their boxes
    recomputed, emptied and degenerate ones dropped. p: a row's probability (torchvision:
    always). resize_interpolation is torchvision's argument for images of different
    sizes; a batch's rows share one size, so only its default is taken."""
    type = "copy_paste"

    def __init__(self, blending=True, resize_interpolation=InterpolationMode.BILINEAR, p=1.0):
        if _interpolation("SimpleCopyPaste", resize_interpolation) != "bilinear":
            _refuse(f"SimpleCopyPaste(resize_interpolation={resize_interpolation!r})",
                    "a batch's rows share one size: nothing is resized")
        super().__init__(blending=bool(blending), p=p)
