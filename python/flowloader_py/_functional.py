"""flowloader.transforms.functional: torchvision 0.14's functional names and signatures,
on flowloader's native ops (the loader's pixels), for PIL images, numpy uint8 HWC arrays
and torch tensors [..., C, H, W] (docs/python.md, "functional").

    import flowloader.transforms.functional as F
    out = F.adjust_hue(F.resized_crop(img, 10, 20, 100, 120, [64, 64]), 0.1)

Each function is one native op with its parameters given (the op's get_params values);
the image comes back in the form it came in. What torchvision has and flowloader does
not (adjust_gamma, ...) is not here: calling it raises AttributeError.
"""

import functools
import numbers
from collections.abc import Sequence

from flowloader import _eager
from flowloader import transforms as _T

InterpolationMode = _T.InterpolationMode

__all__ = [
    "InterpolationMode", "adjust_brightness", "adjust_contrast", "adjust_gamma",
    "adjust_hue", "adjust_saturation", "adjust_sharpness", "affine", "autocontrast",
    "center_crop", "convert_image_dtype", "crop", "equalize", "erase", "five_crop", "gaussian_blur",
    "get_dimensions", "get_image_num_channels", "get_image_size", "hflip", "invert",
    "normalize", "pad", "perspective", "pil_to_tensor", "posterize", "resize",
    "resized_crop", "rgb_to_grayscale", "rotate", "solarize", "ten_crop", "to_grayscale",
    "to_pil_image", "to_tensor", "vflip",
]

_NAN = float("nan")


@functools.lru_cache(maxsize=256)
def _op(text):
    from flowloader import _flowloader
    return _flowloader._EagerOp(text)


def _text(name, **args):
    """The op text of `name` with `args`, after torchvision's type checks (_T._check_types:
    a str, None or object where its function computes with a number is its TypeError, not
    the op parser's ValueError)."""
    args = {k: _T._seq(v) for k, v in args.items()}
    _T._check_types(name, args, ())
    text = _T._op_text(name, args)
    try:
        _op(text)
    except ValueError as e:
        _T._raise_wrong_type(e, args)
        _T._raise_torch_failure(e, args)
        raise
    return text


def _run(img, text, params=(), box=None, fill_none=False):
    """img through one native op with `params`, in the form it came in (box: see
    _eager.State.native). fill_none: rotate/affine/perspective's fill=None, which on a
    float tensor is torchvision's grid_sample without the fill mask (_float.py)."""
    op = _op(text) if isinstance(text, str) else text  # (Or an op: _fill_op's.)
    if type(img) is _eager._TENSOR:  # One float tensor: _float_fast, without a State.
        out = _eager._fast().run(img, op, params, box, fill_none)
        if out is not _eager._fast().NO:
            return out
    state = _eager.State(img)
    state.float_fill_none = fill_none
    state.native(op, params, box=box)
    return state.result()


def _fill_op(name, fill, **args):
    """The op `name` with `fill` and `args` (the text, as _run takes it). A fill the op
    parser refuses (past a C int, NaN), which only a float tensor gets here (torchvision's
    float kernels take any float): the op made with fill 0, its text (what _float.py
    reads) holding the fill."""
    if _T._c_int_fill_error(name, _T._seq(fill)) is None:
        return _text(name, fill=fill, **args)
    op = _op(_text(name, fill=0, **args))
    return _T._FloatFillOp(op, _T._op_text(name, dict(
        {k: _T._seq(v) for k, v in args.items()}, fill=_T._seq(fill))))


def _no_antialias(img):
    """antialias=False: torchvision's warning unless img is a float tensor (which takes
    it), as the classes' (_T._warn_antialias)."""
    if _eager._is_tensor(img) and img.dtype.is_floating_point:
        return
    _T._warn_antialias("pil" if _eager._is_pil(img) else "uint8")


def _number(fn, name, value):
    """value when it is an int or a float (torchvision: "Argument angle should be int or
    float"), else that TypeError in one line."""
    if not isinstance(value, (int, float)):
        raise TypeError(f"{fn}: {name} should be int or float, got {_T._cut(repr(value))}")
    return value


def _two(fn, name, size):
    """A size of 1 or 2 values (torchvision's ValueError for any other length)."""
    if isinstance(size, (list, tuple)) and len(size) not in (1, 2):
        raise ValueError(f"{fn}: {name} must be an int or a 1 or 2 element tuple/list, not "
                         f"a {len(size)} element tuple/list")
    return size


def _uint8_tensor(img):
    """"tensor" for a uint8 tensor (float tensors' kernels check for themselves), else ""."""
    return "tensor" if _eager._is_tensor(img) and not img.dtype.is_floating_point else ""


def _mode(fn, interpolation, resize=False):
    return _T._interpolation(fn, interpolation, resize)


# -- geometry ------------------------------------------------------------------------------
def _pil_fill(fn, img, fill):
    """torchvision's _parse_fill on a PIL image: one fill value per channel, or one number
    (a ValueError at the call; flowloader's op would repeat one value). Returns the fill
    to use: a numpy scalar on a PIL image of several channels is PIL's packed colour
    (_T._packed_fill)."""
    if _eager._is_pil(img) and isinstance(fill, (tuple, list)) and \
            len(fill) != len(img.getbands()):
        raise ValueError(f"{fn}: the number of elements in 'fill' does not match the number "
                         f"of channels of the image ({len(fill)} != {len(img.getbands())})")
    packed = _T._packed_fill(fill)
    if packed is not None and _eager._is_pil(img) and len(img.getbands()) > 1:
        return _T._unpacked(packed, len(img.getbands()))  # PIL's packed colour.
    return fill


def _grid_fill(fn, img, fill):
    """rotate/affine/perspective's fill: _pil_fill's on a PIL image; on a uint8 tensor the
    levels torchvision's grid transform fills with, torch's uint8 cast of the float fill
    (_T._grid_fill_levels: 300 is 44, 2.7 is 3)."""
    fill = _pil_fill(fn, img, fill)
    if fill is not None and _uint8_tensor(img):
        return _T._grid_fill_levels(fn, _T._seq(fill), img.shape[-3])
    return _c_int(fn, img, fill)


def _c_int(fn, img, fill):
    """fill, unless PIL's int of it fails (_T._c_int_fill_error: past a C int, infinite,
    NaN): that error, but on a float tensor (torchvision fills it with any float:
    _fill_op)."""
    if _eager._is_tensor(img) or _T._c_int_fill_error(fn, _T._seq(fill)) is None:
        return fill
    one_band = _eager._is_pil(img) and len(img.getbands()) == 1
    error = _T._c_int_fill_error(fn, _T._seq(fill), one_band)
    if error is not None:
        raise error
    return _T._clamped_fill(_T._seq(fill))  # A one-band image's C long: PIL clamps it.


def _size_ints(fn, size):
    """torchvision's resize size: an int or a sequence of one or two ints (a float, a numpy
    int or a str is its TypeError, a float in the sequence too)."""
    _T._resize_size(fn, size)
    _T._check_types(fn, {"size": _T._seq(size)}, ("size",))


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=None):
    if max_size is not None and isinstance(size, Sequence) and len(size) != 1:
        # torchvision's first check of max_size (its ValueError), before its type.
        raise ValueError(f"resize: max_size should only be passed if size specifies the length "
                         f"of the smaller edge (an int or a sequence of one), got size "
                         f"{_T._cut(repr(size))}")
    _size_ints("resize", size)
    if _T._antialias("resize", antialias):
        _no_antialias(img)
    aa = {"antialias": True} if antialias else {}  # Float tensors' antialias path.
    mode = _mode("resize", interpolation, True)
    _T._tensor_resize(_uint8_tensor(img), mode)
    _T._tensor_bool_size("resize", "tensor" if _eager._is_tensor(img) else "",
                         _T._bool_first(size, (2,)))
    return _run(img, _text("resize", size=_T._size(size),
                           interpolation=mode,
                           max_size=max_size, **aa))


def resized_crop(img, top, left, height, width, size,
                 interpolation=InterpolationMode.BILINEAR, antialias=None):
    no_antialias = _T._antialias("resized_crop", antialias)
    _two("resized_crop", "size", size)
    _size_ints("resized_crop", size)
    tensor = _eager._is_tensor(img)
    for name, value in (("top", top), ("left", left), ("height", height), ("width", width)):
        if not _T._is_number(value) or isinstance(value, bool):  # torchvision's TypeError.
            raise TypeError(f"resized_crop: {name} must be a number, got {_T._cut(repr(value))}")
        if tensor and not isinstance(value, numbers.Integral):  # Its slice's TypeError.
            raise TypeError(f"resized_crop: {name} must be an int on a tensor (slice indices), "
                            f"got {_T._cut(repr(value))}")
    top, left, height, width = _pil_box(tensor, top, left, height, width)
    if height < 1 or width < 1:
        raise ValueError(f"resized_crop: the box's height and width must be at least 1, got "
                         f"{height}x{width}")
    image_w, image_h = get_image_size(img)
    if top < 0 or left < 0 or top + height > image_h or left + width > image_w:
        # Partly outside: torchvision's crop pads with zeros, then resizes.
        return resize(crop(img, top, left, height, width), size, interpolation,
                      antialias=antialias)
    if no_antialias:  # (resize warns in the case above.)
        _no_antialias(img)
    _T._tensor_bool_size("resized_crop", "tensor" if _eager._is_tensor(img) else "",
                         _T._bool_first(size, (2,)))
    size = _T._size(size)
    if isinstance(size, numbers.Number):  # F.resize's shorter side, as torchvision.
        short, long = (width, height) if width <= height else (height, width)
        new_long = int(size * long / short)
        h, w = (new_long, int(size)) if width <= height else (int(size), new_long)
    else:
        h, w = _T._hw(size)
    aa = {"antialias": True} if antialias else {}  # Float tensors' antialias path.
    mode = _mode("resized_crop", interpolation, True)
    _T._tensor_resize(_uint8_tensor(img), mode)
    return _run(img, _text("random_resized_crop", size=[h, w],
                           interpolation=mode, **aa),
                [top, left, height, width], box=[top, left, height, width])


def _pil_box(tensor, top, left, height, width):
    """The box (top, left, height, width) as ints: a PIL image's crop is Image.crop((left,
    top, left + width, top + height)), which rounds each edge (Python's round, half to
    even: a height of 7.5 from 100 is 8); a tensor's are ints already (its slice)."""
    if tensor:
        return int(top), int(left), int(height), int(width)
    x0, y0 = round(float(left)), round(float(top))
    x1, y1 = round(float(left) + float(width)), round(float(top) + float(height))
    return y0, x0, y1 - y0, x1 - x0


def crop(img, top, left, height, width):
    """The box (top, left, height, width); zeros where it lies outside the image, as
    torchvision pads."""
    w, h = get_image_size(img)
    tensor = _eager._is_tensor(img)
    for name, value in (("top", top), ("left", left), ("height", height), ("width", width)):
        # A str: torchvision's TypeError too; a float on a tensor: its slice's TypeError.
        if not isinstance(value, numbers.Integral if tensor else numbers.Real):
            raise TypeError(f"crop: {name} must be {'an int' if tensor else 'a number'}, got "
                            f"{_T._cut(repr(value))}")
    top, left, height, width = _pil_box(tensor, top, left, height, width)
    pad = [max(0, -left), max(0, -top), max(0, left + width - w), max(0, top + height - h)]
    if max(pad) > 16384:  # The pad the native op takes; named here as the user wrote it.
        box = _T._cut(f"top={top}, left={left}, height={height}, width={width}")
        # A huge distance (1e308 as an int) is not quoted.
        past = (f"{max(pad)} pixels past its edge, over 16384" if max(pad) < 10**9
                else "more than 16384 pixels past its edge")
        raise ValueError(f"flowloader.transforms: crop({box}) of a {w}x{h} image reaches "
                         f"{past}: give a box within 16384 pixels of the image")
    text = _text("random_crop", size=[height, width],
                 padding=pad if any(pad) else None)
    params = [top + pad[1], left + pad[0], height, width]
    return _run(img, text, params, box=None if any(pad) else params)


def center_crop(img, output_size):
    # torchvision: a number is int(number) (2.5 is 2), as the CenterCrop class's size; a
    # float in a sequence is a tensor's slice's TypeError.
    _str_size("center_crop", output_size)
    _T._pil_float_pad("pil" if _eager._is_pil(img) else "", "center_crop", output_size,
                      *get_image_size(img))
    _T._tensor_int_size("tensor" if _eager._is_tensor(img) else "", "center_crop",
                        output_size)
    if isinstance(output_size, numbers.Number):
        output_size = int(output_size)
    return _run(img, _text("center_crop", size=_T._size(output_size)))


def pad(img, padding, fill=0, padding_mode="constant"):
    """torchvision's pad: padding an int, [left/right, top/bottom] or [l, t, r, b]; modes
    constant, edge, reflect, symmetric (the native pad op)."""
    _T._padding("pad", padding)
    if not isinstance(padding_mode, str):  # torchvision's check.
        raise TypeError(f"pad: got inappropriate padding_mode arg {_T._cut(repr(padding_mode))}")
    p = [padding] if isinstance(padding, numbers.Number) else list(padding)
    if len(p) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a "
                         f"{len(p)} element tuple")
    kind = _uint8_tensor(img)
    # torchvision's tensor pad checks padding's and fill's types first, in every mode (a
    # float tensor's too: a Python int, tuple or list; a Python number).
    any_tensor = kind or ("float" if _eager._is_tensor(img) else "")
    _T._tensor_padding(any_tensor, padding)
    if any_tensor:
        _T._tensor_fill(any_tensor, 0 if fill is None else fill,
                        constant=padding_mode == "constant")
    _T._tensor_pad(kind, *get_image_size(img), p, padding_mode)
    if padding_mode == "constant":
        fill = 0 if fill is None else fill  # torchvision's _parse_fill.
        if not isinstance(fill, (numbers.Number, tuple, list)):  # torchvision's check.
            raise TypeError(f"pad: got inappropriate fill arg {_T._cut(repr(fill))}: a number "
                            "or a tuple of them")
        fill = _c_int("pad", img, _pil_fill("pad", img, fill))
    return _run(img, _fill_op("pad", fill, padding=[int(v) for v in p],
                              padding_mode=padding_mode))


def _str_size(fn, size):
    """A str size is a sequence of its characters to torchvision: one of a length other
    than two fails as unpacking / its length check (ValueError), two as comparisons of
    str with int (TypeError)."""
    if isinstance(size, str):
        if len(size) != 2:
            raise ValueError(f"{fn}: please provide only two dimensions (h, w) for size, got "
                             f"{_T._cut(repr(size))}")
        raise TypeError(f"{fn}: size must hold numbers, got {_T._cut(repr(size))}")


def five_crop(img, size):
    """(top-left, top-right, bottom-left, bottom-right, centre) crops of size [h, w]."""
    _str_size("five_crop", size)
    if not isinstance(size, numbers.Number) and len(size) not in (1, 2):
        raise ValueError(f"five_crop: please provide only two dimensions (h, w) for size, "
                         f"got {_T._cut(list(size))}")
    if not isinstance(size, numbers.Number):
        _T._numbers("five_crop", "size", size)  # torchvision compares them (TypeError).
    crop_h, crop_w = _T._hw(size if isinstance(size, numbers.Number) or len(size) != 1
                            else size[0])
    image_w, image_h = get_image_size(img)
    if crop_w > image_w or crop_h > image_h:
        raise ValueError(f"Requested crop size {_T._cut((crop_h, crop_w))} is bigger than "
                         f"input size {(image_h, image_w)}")
    if not isinstance(size, numbers.Number):  # Its crops' slices (after that check).
        _T._tensor_int_size("tensor" if _eager._is_tensor(img) else "", "five_crop", size)
    tl = crop(img, 0, 0, crop_h, crop_w)
    tr = crop(img, 0, image_w - crop_w, crop_h, crop_w)
    bl = crop(img, image_h - crop_h, 0, crop_h, crop_w)
    br = crop(img, image_h - crop_h, image_w - crop_w, crop_h, crop_w)
    return tl, tr, bl, br, center_crop(img, [crop_h, crop_w])


def ten_crop(img, size, vertical_flip=False):
    """five_crop of the image, then of its flip (horizontal, or vertical)."""
    return five_crop(img, size) + five_crop(vflip(img) if vertical_flip else hflip(img), size)


def hflip(img):
    return _run(img, "random_horizontal_flip(p=1)")


def vflip(img):
    return _run(img, "random_vertical_flip(p=1)")


def _center(fn, img, center):
    """F.rotate/affine's center: None or a list or tuple (torchvision's TypeError), [x, y]
    in pixels from the top-left. Its first two values (PIL's rotate and the tensor
    functions' zip read no more; F.affine's PIL matrix unpacks exactly two), the op args'
    {"center": [x, y]}; {} for None."""
    if center is None:
        return {}
    if not isinstance(center, (list, tuple)):
        raise TypeError(f"{fn}: Argument center should be a sequence, got "
                        f"{_T._cut(repr(center))}")
    exact = fn == "affine" and _eager._is_pil(img)
    if len(center) < 2 or (exact and len(center) != 2):
        raise ValueError(f"{fn}: center should hold two values [x, y], got "
                         f"{_T._cut(repr(center))}")
    _T._numbers(fn, "center", center[:2])
    return {"center": [center[0], center[1]]}


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    _number("rotate", "angle", angle)
    centre = _center("rotate", img, center)  # torchvision's order: before interpolation.
    mode = _mode("rotate", interpolation)
    _T._tensor_grid("tensor" if _eager._is_tensor(img) else "", mode)
    fill = _grid_fill("rotate", img, fill)
    return _run(img, _fill_op("random_rotation", 0 if fill is None else fill, degrees=0,
                              interpolation=mode, expand=bool(expand), **centre), [angle],
                fill_none=fill is None)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    # torchvision's checks, in its order.
    _number("affine", "angle", angle)
    if not isinstance(translate, (list, tuple)):
        raise TypeError(f"affine: translate should be a sequence, got "
                        f"{_T._cut(repr(translate))}")
    if len(translate) != 2:
        raise ValueError(f"affine: translate should be a sequence of length 2, got "
                         f"{_T._cut(repr(translate))}")
    _T._numbers("affine", "translate", translate)  # Its arithmetic's TypeError.
    if not _T._is_number(scale):  # torchvision compares it with 0.0 (a numpy one too).
        raise TypeError(f"affine: scale should be a number, got {_T._cut(repr(scale))}")
    if scale <= 0.0:
        raise ValueError(f"affine: scale should be positive, got {scale}")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError(f"affine: shear should be either a single value or a sequence of two "
                        f"values, got {_T._cut(repr(shear))}")
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    _T._numbers("affine", "shear", shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"affine: shear should be a sequence containing two values, got "
                         f"{_T._cut(shear)}")
    mode = _mode("affine", interpolation)
    centre = _center("affine", img, center)
    _T._tensor_grid("tensor" if _eager._is_tensor(img) else "", mode)
    fill = _grid_fill("affine", img, fill)
    return _run(img, _fill_op("random_affine", 0 if fill is None else fill, degrees=0,
                              interpolation=mode, **centre),
                [angle, translate[0], translate[1], scale, shear[0], shear[1]],
                fill_none=fill is None)


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR,
                fill=None):
    """torchvision's: the map taking endpoints to startpoints ([[x, y]] * 4), solved as
    torchvision solves it (torch's float32 least squares, _T._perspective_solution)."""
    points = [float(v) for pts in (endpoints, startpoints) for pt in pts for v in pt]
    if len(points) != 16:
        # torchvision's view(8) of the points fails so (a RuntimeError).
        raise _T._TorchRuntimeError("perspective: startpoints and endpoints must be 4 [x, y] "
                                    "points each, "
                         f"got {startpoints!r} and {endpoints!r}")
    _solvable("perspective", startpoints, endpoints)
    mode = _mode("perspective", interpolation)
    _T._tensor_grid("tensor" if _eager._is_tensor(img) else "", mode)
    fill = _grid_fill("perspective", img, fill)
    coeffs = _T._perspective_solution(startpoints, endpoints)
    if coeffs is not None:  # torchvision's own map (its float32 solution).
        points += coeffs
    return _run(img, _fill_op("random_perspective", 0 if fill is None else fill, p=1,
                              interpolation=mode), points, fill_none=fill is None)


_SOLVE_ERROR = []


def _solve_error(torch):
    """The class of an unsolvable perspective: torch.linalg.LinAlgError (torchvision's
    least squares raises it) and the ValueError flowloader raised before."""
    if not _SOLVE_ERROR:
        _SOLVE_ERROR.append(type("_PerspectiveSolveError",
                                 (ValueError, torch.linalg.LinAlgError), {}))
    return _SOLVE_ERROR[0]


def _solvable(name, startpoints, endpoints):
    """Raises where torchvision's _get_perspective_coeffs does: its float32 least squares
    (torch.linalg.lstsq, driver gels) on the same matrix fails for points that are equal
    or in a line (no single map). Solved here as torchvision solves it, so that exactly
    its refusals are refused."""
    import torch
    a = torch.zeros(8, 8, dtype=torch.float)
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a[2 * i, :] = torch.tensor([p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]])
        a[2 * i + 1, :] = torch.tensor([0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0],
                                        -p2[1] * p1[1]])
    b = torch.tensor(startpoints, dtype=torch.float).view(8)
    try:
        torch.linalg.lstsq(a, b, driver="gels")
    except RuntimeError:  # torch.linalg.LinAlgError is one.
        raise _solve_error(torch)(f"{name}: startpoints {_T._cut(startpoints)} and endpoints "
                         f"{_T._cut(endpoints)} have no solution (points equal or three in a "
                         "line), where torchvision's least squares raises: give four "
                         "distinct corners, no three in a line") from None


# -- colour --------------------------------------------------------------------------------
def _jitter(img, which, factor, name):
    params = [0, 1, 2, 3, _NAN, _NAN, _NAN, _NAN]
    params[4 + which] = float(factor)
    return _run(img, f"color_jitter({name}={0.5 if name == 'hue' else 1})", params)


def adjust_brightness(img, brightness_factor):
    _non_negative("brightness_factor", brightness_factor, img)
    return _jitter(img, 0, brightness_factor, "brightness")


def adjust_contrast(img, contrast_factor):
    _non_negative("contrast_factor", contrast_factor, img)
    return _jitter(img, 1, contrast_factor, "contrast")


def adjust_saturation(img, saturation_factor):
    _non_negative("saturation_factor", saturation_factor, img)
    return _jitter(img, 2, saturation_factor, "saturation")


def adjust_hue(img, hue_factor):
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    return _jitter(img, 3, hue_factor, "hue")


def adjust_sharpness(img, sharpness_factor):
    _non_negative("sharpness_factor", sharpness_factor, img)
    return _run(img, _text("random_adjust_sharpness", sharpness_factor=sharpness_factor, p=1))


def adjust_gamma(img, gamma, gain=1):
    """gain * value ** gamma on 8-bit pixels (PIL's table; the uint8 tensor path's
    numbers). torchvision's check first: gamma must not be negative."""
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    return _run(img, _text("adjust_gamma", gamma=gamma, gain=gain))


def _non_negative(name, value, img):
    """torchvision's check of an enhancement factor: its tensor kernels refuse a negative
    one; its PIL path (ImageEnhance's blend) takes it and extrapolates, as the op does."""
    if value < 0 and not _eager._is_pil(img):
        raise ValueError(f"{name} ({value}) is not non-negative.")
    if value != value:  # NaN is the op's "not drawn": the image came back unchanged.
        raise ValueError(f"{name} is NaN: give a number >= 0 (1 leaves the image as it is)")


def rgb_to_grayscale(img, num_output_channels=1):
    """PIL's L (R*299/1000 + G*587/1000 + B*114/1000); one channel (mode L for a PIL
    image) or three equal ones."""
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    state = _eager.State(img)
    state.native(_op("grayscale()"), [])
    # A PIL L image with 3 becomes RGB; a tensor keeps its channels with 3 (torchvision's
    # expand to the input's shape: one channel stays one).
    if num_output_channels == 1 or state.kind == "pil":
        state.channels = num_output_channels
    return state.result()


def to_grayscale(img, num_output_channels=1):
    """torchvision 0.14's PIL-only form of rgb_to_grayscale."""
    from PIL import Image
    if not isinstance(img, Image.Image):
        raise TypeError("Input should be PIL Image")
    return rgb_to_grayscale(img, num_output_channels)


def gaussian_blur(img, kernel_size, sigma=None):
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"gaussian_blur: kernel_size should be int or a sequence of integers, "
                        f"got {_T._cut(repr(kernel_size))}")
    ks = [kernel_size, kernel_size] if isinstance(kernel_size, int) else list(kernel_size)
    if len(ks) != 2:
        raise ValueError(f"gaussian_blur: if kernel_size is a sequence its length should be "
                         f"2, got {len(ks)}")
    if not all(isinstance(k, int) for k in ks):
        raise TypeError(f"gaussian_blur: kernel_size should be integers, got {_T._cut(ks)}")
    _T._tensor_blur(*get_image_size(img), ks)
    if sigma is None:  # torchvision's default: from the kernel size.
        sigma = [ksize * 0.15 + 0.35 for ksize in ks]
    sigma = [sigma, sigma] if isinstance(sigma, numbers.Number) else list(sigma)
    if len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if sigma[0] != sigma[1]:
        raise ValueError(f"flowloader's gaussian_blur takes one sigma for both axes, got "
                         f"{sigma}")
    return _run(img, _text("gaussian_blur", kernel_size=ks, sigma=[sigma[0], sigma[0]]),
                [float(sigma[0])])


def solarize(img, threshold):
    _T._not_text("solarize", "threshold", threshold)
    _T._solarize_bound(_uint8_tensor(img), threshold)
    threshold = _T._tensor_threshold(_uint8_tensor(img), threshold)
    return _run(img, _text("random_solarize", threshold=threshold, p=1))


def posterize(img, bits):
    _T._not_text("posterize", "bits", bits)
    _T._pil_bits("pil" if _eager._is_pil(img) else "", bits)
    return _run(img, _text("random_posterize", bits=bits, p=1))


def equalize(img):
    return _run(img, "random_equalize(p=1)")


def autocontrast(img):
    return _run(img, "random_autocontrast(p=1)")


def invert(img):
    return _run(img, "random_invert(p=1)")


# -- tensors -------------------------------------------------------------------------------
def erase(img, i, j, h, w, v, inplace=False):
    """The box set to v (a number, or one value per channel) on a float tensor."""
    for name, value in (("i", i), ("j", j), ("h", h), ("w", w)):
        if not isinstance(value, numbers.Real):
            raise TypeError(f"erase: {name} must be an int, got {_T._cut(repr(value))}")
    value = v.flatten().tolist() if hasattr(v, "flatten") else v
    if isinstance(value, list) and len(value) not in (1, 3):
        raise ValueError(f"flowloader's erase takes v as one value or one per channel, got "
                         f"{len(value)} values (a noise tensor is not supported)")
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    out = _run(img, _text("random_erasing", value=value, p=1), [i, j, h, w, 0])
    if inplace:
        img.copy_(out)
        return img
    return out


def normalize(tensor, mean, std, inplace=False):
    out = _T.Normalize(mean, std)(tensor)
    if inplace:
        tensor.copy_(out)
        return tensor
    return out


def to_tensor(pic):
    return _T.ToTensor()(pic)


def pil_to_tensor(pic):
    return _T.PILToTensor()(pic)


def convert_image_dtype(image, dtype=None):
    import torch
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"convert_image_dtype: input img should be a Tensor Image, got "
                        f"{type(image).__name__}")
    dtype = torch.float if dtype is None else dtype
    if dtype == torch.float32:
        return _T.ConvertImageDtype(dtype)(image)
    if dtype == torch.uint8 and image.dtype == torch.float32:
        state = _eager.State(image)
        state.float_to_uint8()
        return state.result()
    if dtype == image.dtype:
        return image
    raise TypeError(f"flowloader's convert_image_dtype converts between uint8 and float32, "
                    f"got {image.dtype} -> {_T._cut(dtype)}")


def to_pil_image(pic, mode=None):
    """A uint8 or float (scaled by 255, truncated, as torchvision) image, [C, H, W] tensor
    or HWC array with 1 or 3 channels, as a PIL image (L or RGB)."""
    import numpy as np
    from PIL import Image
    if not (_eager._is_tensor(pic) or isinstance(pic, np.ndarray)):
        raise TypeError(f"to_pil_image: pic should be Tensor or ndarray, got "
                        f"{type(pic).__name__}")
    if _eager._is_tensor(pic):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        t = pic if pic.ndim == 3 else pic[None]
        if t.is_floating_point() and mode != "F":
            t = t.mul(255).byte()
        arr = t.permute(1, 2, 0).numpy()
    else:
        arr = np.asarray(pic)
        if arr.ndim not in (2, 3):  # torchvision's check (a 1-D array broke the shape test).
            raise ValueError(f"pic should be 2/3 dimensional. Got {arr.ndim} dimensions.")
        if arr.ndim == 2:
            arr = arr[:, :, None]
    if arr.dtype != np.uint8 or arr.shape[2] not in (1, 3):
        raise TypeError(f"flowloader's to_pil_image takes uint8 (or float) images with 1 or 3 "
                        f"channels, got {arr.dtype} with shape {arr.shape}")
    if arr.shape[2] == 1:
        return Image.fromarray(np.ascontiguousarray(arr[:, :, 0]), mode or "L")
    return Image.fromarray(np.ascontiguousarray(arr), mode or "RGB")


# -- sizes ---------------------------------------------------------------------------------
def get_image_size(img):
    """[width, height]."""
    return list(_T._image_wh(img))


def get_image_num_channels(img):
    return get_dimensions(img)[0]


def get_dimensions(img):
    """[channels, height, width]."""
    if _eager._is_pil(img):
        return [len(img.getbands()), img.size[1], img.size[0]]
    if not hasattr(img, "shape") or len(img.shape) < 2:  # torchvision's TypeError.
        raise TypeError(f"get_dimensions: unexpected type {type(img).__module__}."
                        f"{type(img).__qualname__}: a PIL image, a tensor or an array")
    shape = tuple(img.shape)
    if _eager._is_tensor(img):
        return [shape[-3] if len(shape) >= 3 else 1, shape[-2], shape[-1]]
    return [shape[2] if len(shape) == 3 else 1, shape[0], shape[1]]
