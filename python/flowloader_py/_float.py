"""flowloader.transforms called on a float tensor (docs/python.md, "Calling transforms
directly", "Float tensors"): torchvision 0.14's tensor kernels, not PIL's.

A native op queued on a float image (_eager.State.native) comes here and runs at once,
on each image of the batch, through the C++ kernels of stages/augment/float/ (the
extension's _float_gather, _float_resize and _float_colour, the GIL released):

    flips, crops, pads (center_crop, random_crop, pad)   the uint8 op's own pixel moves
                                                        (its Op::Gather maps), any dtype,
                                                        exact; the fill as given
    resize, random_resized_crop                         interpolate(align_corners=False),
                                                        antialias as the class's (None:
                                                        False, as torchvision 0.14)
    color_jitter, grayscale, random_grayscale,          functional_tensor's formulas on
    random_invert, random_solarize, adjust_gamma,       [0, 1] floats
    random_adjust_sharpness, random_autocontrast,
    gaussian_blur
    random_rotation, random_affine,                     torchvision's affine / perspective
    random_perspective, elastic_transform               grid and grid_sample (nearest,
                                                        bilinear), its fill mask

Anything else on a float tensor raises TypeError naming the op (posterize and equalize
take uint8 only, as torchvision's tensor kernels). An image is float32 or float64
[C, H, W], C 1 or 3 (a one-channel image runs as one plane; _eager keeps three equal
planes for some, sliced here).
"""

import math

import numpy as np

from flowloader._eager import _core  # The extension, imported on first use and kept.


# -- the op's arguments, from its text ("random_crop(size=32, padding=4, ...)") ---------
_ARGS = {}


def _value(text):
    text = text.strip()
    if text.startswith("["):
        inner = text[1:-1].strip()
        return [_value(v) for v in _split(inner)] if inner else []
    if text in ("null", "none"):
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return float(text)
    except ValueError:
        return text


def _split(text):
    """text split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def args_of(op):
    """The op's arguments as {name: value} (numbers as floats, lists, words, None)."""
    text = op.text
    args = _ARGS.get(text)
    if args is None:
        inner = text[text.index("(") + 1:text.rindex(")")] if "(" in text else ""
        args = {}
        for part in _split(inner):
            name, _, value = part.partition("=")
            args[name.strip()] = _value(value)
        if len(_ARGS) < 1024:
            _ARGS[text] = args
    return args


# -- the kernels by op ---------------------------------------------------------------------
def _gather(a, op, args, params):
    """A pixel move: the uint8 op's Op::Gather maps, applied to the planes; a box inside
    the image is a view of it, as torchvision's tensor crop (img[..., t:b, l:r])."""
    xs, ys, box = _maps(op, params, a.shape[2], a.shape[1])
    if box is not None:
        return a[:, box[0]:box[1], box[2]:box[3]]
    fill = _FILLS.get((op, a.shape[0]))
    if fill is None:
        fill = _fill(args, a.shape[0], op.name)  # (Refused here, every call, if wrong.)
        if len(_FILLS) >= 1024:
            _FILLS.clear()
        _FILLS[(op, a.shape[0])] = fill
    return _core()._float_gather(np.ascontiguousarray(a), xs, ys, fill)


# Each op's fill values by (op, channels), as _fill gives them.
_FILLS = {}


# The maps by (op text, params, width, height): a flip's or a crop's are the same call
# after call, and making them (gather_maps, then _run_of's numpy checks) cost ~8 µs of a
# 224² vertical flip's ~20. Cleared when full (random corners make many keys).
_MAPS = {}


def _maps(op, params, w, h):
    """(x map, y map, (top, bottom, left, right) when they are one box inside the image,
    else None) of gather op `op` with `params` on a w x h image."""
    key = (op, tuple(params), w, h)  # The op object (its text is a new str per call).
    hit = _MAPS.get(key)
    if hit is None:
        maps = op.gather_maps([float(v) for v in params], w, h)
        if maps is None:  # (torch's slice or pad fails so: a RuntimeError there.)
            from flowloader.transforms import _TorchRuntimeError
            raise _TorchRuntimeError(f"flowloader.transforms: {op.name} with parameters "
                                     f"{[float(v) for v in params]} does not fit a {w}x{h} "
                                     "image")
        xs, ys = maps
        x0, y0 = int(xs[0]), int(ys[0])
        box = ((y0, y0 + len(ys), x0, x0 + len(xs))
               if x0 >= 0 and y0 >= 0 and _run_of(xs) and _run_of(ys) else None)
        if len(_MAPS) >= 4096:
            _MAPS.clear()
        hit = _MAPS[key] = (xs, ys, box)
    return hit


def _run_of(m):
    """Whether map m is consecutive source indices (a crop's, not a flip's or a pad's)."""
    return len(m) == 1 or bool((np.diff(m) == 1).all())


def _fill(args, channels, name):
    """The constant padding's value for each channel: torchvision's tensor pad takes one
    number (int or float), used as given (not scaled)."""
    fill = args.get("fill", 0)
    fill = 0 if fill is None else fill
    if isinstance(fill, list):
        if len(fill) != 1 and len(set(fill)) != 1:
            raise TypeError(f"flowloader.transforms: {name}(fill={fill}) on a float tensor: "
                            "torchvision's tensor pad takes one number (int or float) as fill")
        fill = fill[0]
    return [float(fill)] * channels


def _check_reflect(args, name, pads, w, h):
    """torch's reflect pad needs each pad (left, top, right, bottom) less than its side
    of the w × h image it pads, torchvision's symmetric one at most that side (numpy's,
    which the uint8 ops follow, repeats the reflection instead)."""
    mode = args.get("padding_mode")
    if mode not in ("reflect", "symmetric"):
        return
    limit = 0 if mode == "reflect" else 1  # A pad must be < side + limit.
    if any(p >= (w if i % 2 == 0 else h) + limit for i, p in enumerate(pads)):
        raise ValueError(f"flowloader.transforms: {name} pads {pads} (left, top, right, "
                         f"bottom) in {mode} mode a {w}x{h} float tensor: torchvision's "
                         f"tensor {mode} padding needs each pad "
                         f"{'less than' if mode == 'reflect' else 'at most'} that side "
                         "(padding_mode='edge' or 'constant' has no limit)")


def _ltrb(padding):
    if padding is None:
        return [0, 0, 0, 0]
    p = padding if isinstance(padding, list) else [padding]
    p = [int(v) for v in p]
    if len(p) == 1:
        return p * 4
    if len(p) == 2:
        return [p[0], p[1], p[0], p[1]]
    return p


def _pad_op(a, op, args, params):
    _check_reflect(args, op.name, _ltrb(args.get("padding")), a.shape[2], a.shape[1])
    return _gather(a, op, args, params)


def _random_crop(a, op, args, params):
    """RandomCrop's forward: padding, then pad_if_needed's width pad, then its height
    pad (torch's reflect limit checked at each), then the crop: one gather."""
    pads = _ltrb(args.get("padding"))
    w, h = a.shape[2], a.shape[1]
    _check_reflect(args, op.name, pads, w, h)
    if args.get("pad_if_needed"):
        th, tw = _hw(args["size"])
        w, h = w + pads[0] + pads[2], h + pads[1] + pads[3]
        more_w = max(tw - w, 0)
        _check_reflect(args, op.name, [more_w, 0, more_w, 0], w, h)
        w += 2 * more_w
        more_h = max(th - h, 0)
        _check_reflect(args, op.name, [0, more_h, 0, more_h], w, h)
    return _gather(a, op, args, params)


def _hw(size):
    if isinstance(size, list):
        return (int(size[0]), int(size[0])) if len(size) == 1 else (int(size[0]), int(size[1]))
    return int(size), int(size)


def _mode(args, name):
    mode = args.get("interpolation", "bilinear")
    if mode not in ("nearest", "bilinear", "bicubic"):
        from flowloader.transforms import _TorchNotImplementedError  # torch's interpolate's.
        raise _TorchNotImplementedError(
            f"flowloader.transforms: {name}(interpolation={mode}) on a float tensor: "
            "torchvision's tensor resize takes NEAREST, BILINEAR and BICUBIC (BOX, HAMMING "
            "and LANCZOS are PIL's filters: resize before ToTensor)")
    return mode


# The largest side the float kernels make (eager.cc's limit for uint8 images too).
MAX_SIDE = 16384


def check_sides(shape, h, w):
    """Refuses, in one line naming the shape and the limit, an image given with a side
    over MAX_SIDE, before anything copies it or allocates an output of its size (the
    rule of eager.cc's _eager_run, met there only after a copy): torch's expand() makes
    a 100000² view of three values that a copy makes 28 GiB."""
    if h > MAX_SIDE or w > MAX_SIDE:
        raise ValueError(f"flowloader.transforms: an image of shape {tuple(shape)} has a "
                         f"side over {MAX_SIDE}: sides in [1, {MAX_SIDE}] expected (crop "
                         "or resize it first)")


def _check_output(name, h, w, a, knob):
    """Refuses, in one line naming the op and the knob, an output side outside [1,
    MAX_SIDE] (a size the op's own checks pass, reached through the aspect ratio or an
    expand), before anything is allocated."""
    if not (1 <= h <= MAX_SIDE and 1 <= w <= MAX_SIDE):
        raise ValueError(f"flowloader.transforms: {name} of a {a.shape[2]}x{a.shape[1]} "
                         f"float tensor would make a {w}x{h} image, outside [1, {MAX_SIDE}] "
                         f"a side: {knob}")


def _resize_to(a, h, w, mode, antialias, name="resize"):
    """F.resize of a tensor to (h, w): the image itself where the size is already that."""
    if (a.shape[1], a.shape[2]) == (h, w):
        return a
    _check_output(name, h, w, a, "give a smaller size, or max_size")
    s = a.strides
    if not (s[2] == a.itemsize and s[1] >= s[2] * a.shape[2] and s[0] >= s[1] * a.shape[1]):
        # Not a crop of dense planes (a transposed tensor): a copy with numpy's own
        # strides (ascontiguousarray keeps odd ones where a side is 1: a permuted 1x1).
        a = np.array(a, order="C")
    return _core()._float_resize(a, h, w, mode, bool(antialias))


def _resized_size(h, w, size, max_size):
    """torchvision's _compute_resized_output_size: (new_h, new_w)."""
    if isinstance(size, list) and len(size) == 2:
        return int(size[0]), int(size[1])
    requested = int(size[0] if isinstance(size, list) else size)
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = requested, int(requested * long / short)
    if max_size is not None:
        max_size = int(max_size)
        if max_size <= requested:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                             f"requested size for the smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    return (new_long, new_short) if w <= h else (new_short, new_long)


def _resize(a, op, args, params):
    h, w = _resized_size(a.shape[1], a.shape[2], args["size"], args.get("max_size"))
    return _resize_to(a, h, w, _mode(args, op.name), args.get("antialias"))


def _random_resized_crop(a, op, args, params):
    top, left, height, width = (int(v) for v in params[:4])
    crop = a[:, top:top + height, left:left + width]
    if (crop.shape[1], crop.shape[2]) == _hw(args["size"]):
        return crop  # F.resize of that size: the crop itself, a view as torchvision's.
    h, w = _hw(args["size"])
    return _resize_to(crop, h, w, _mode(args, op.name), args.get("antialias"))


def _colour(name, a, *args):
    return _core()._float_colour(name, a, [float(v) for v in args])


def _color_jitter(a, op, args, params):
    """ColorJitter's forward: the four adjustments in fn_idx's order, NaN: not drawn."""
    order, factors = [int(v) for v in params[:4]], [float(v) for v in params[4:8]]
    names = ("brightness", "contrast", "saturation", "hue")
    for i in order:
        f = factors[i]
        if f != f:  # NaN: that adjustment is off.
            continue
        if names[i] in ("saturation", "hue") and a.shape[0] == 1:
            continue  # torchvision: a one-channel image is returned as it is.
        a = _colour(names[i], a, f)
    return a


def _grayscale(a, op, args, params):
    """rgb_to_grayscale with the input's channel count (1: a copy, as torchvision)."""
    if a.shape[0] == 1:
        return a
    g = _colour("grayscale", a)
    # torchvision's three channels are l_img.expand(img.shape): one plane seen three times
    # (stride 0), not a copy; the kernels after it copy where they need dense planes. A
    # copy was 0.97x torchvision at 1024² (a 12 MB write).
    return np.lib.stride_tricks.as_strided(g, shape=(3,) + g.shape[1:],
                                           strides=(0,) + g.strides[1:])


def _solarize(a, op, args, params):
    threshold = float(args["threshold"])
    if threshold > 1:
        raise TypeError(f"flowloader.transforms: solarize threshold {threshold} on a float "
                        "tensor: the threshold must be at most its bound 1.0 (torchvision's "
                        "'Threshold should be less than bound of img.'); give it in [0, 1]")
    return _colour("solarize", a, threshold)


def _gaussian_blur(a, op, args, params):
    ks = args["kernel_size"]
    ks = [int(ks), int(ks)] if not isinstance(ks, list) else (
        [int(ks[0])] * 2 if len(ks) == 1 else [int(ks[0]), int(ks[1])])
    sigma = float(params[0])
    return _colour("gaussian_blur", a, ks[0], ks[1], sigma, sigma)


# -- rotate, affine, perspective: torchvision's grids, grid_sample's pixels ---------------
def _inverse_affine(angle, translate, scale, shear, center=(0.0, 0.0)):
    """torchvision 0.14's _get_inverse_affine_matrix about `center` (relative to the image
    centre, as its tensor functions give it), in double."""
    cx, cy = center
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [x / scale for x in (d, -b, 0.0, -c, a, 0.0)]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx
    m[5] += cy
    return m


def _center(args, w, h):
    """The op's center=[x, y] in pixels as torchvision's tensor functions' center_f
    (relative to the image centre); the image centre (0, 0) when null."""
    c = args.get("center")
    return (0.0, 0.0) if c is None else (1.0 * (c[0] - w * 0.5), 1.0 * (c[1] - h * 0.5))


def _expanded_size(matrix, w, h):
    """torchvision's _compute_affine_output_size (float32, as its torch code): (w, h)."""
    f = np.float32
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]], f)
    theta = np.array(matrix, f).reshape(2, 3)
    new = pts @ theta.T
    lo = new.min(axis=0) + np.array([w * 0.5, h * 0.5], f)
    hi = new.max(axis=0) + np.array([w * 0.5, h * 0.5], f)
    tol = f(1e-4)
    cmax = np.ceil(np.trunc(hi / tol) * tol)
    cmin = np.floor(np.trunc(lo / tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def _perspective_system(start, end):
    """torchvision's _get_perspective_coeffs' linear system a x = b (float64) for the map
    from end to start points ([[x, y]] * 4)."""
    a = np.zeros((8, 8))
    for i, (p1, p2) in enumerate(zip(end, start)):
        a[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    return a, np.array(start, np.float64).reshape(8)


def _perspective_coeffs(start, end):
    """torchvision's _get_perspective_coeffs (the map from end to start points): solved in
    double, rounded to float32 as torchvision's float32 lstsq gives them."""
    a, b = _perspective_system(start, end)
    try:
        coeffs = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        # End points drawn equal or in a line (RandomPerspective on a small image with a
        # large distortion_scale): no single solution. torchvision's float32 QR (gels)
        # fails for certain only where a column is 0 (a one-pixel side: every y 0);
        # otherwise it mostly returns one of the solutions, and so does this (the
        # least-norm one) instead of a ValueError in the middle of an epoch.
        coeffs = (np.linalg.lstsq(a, b, rcond=None)[0] if np.abs(a).max(axis=0).all()
                  else np.full(8, np.nan))
    if not np.isfinite(coeffs).all():
        import torch  # torchvision's least squares raises torch.linalg.LinAlgError here.
        from flowloader._functional import _solve_error
        raise _solve_error(torch)(
            f"flowloader.transforms: perspective from {end} to {start} has no solution (a "
            "side of one pixel, or points in a line), as torchvision's least squares on a "
            "float tensor")
    return [float(v) for v in coeffs.astype(np.float32)]


def _warp_mode(args, name):
    mode = args.get("interpolation", "nearest")
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"flowloader.transforms: {name}(interpolation={mode}) on a float "
                         "tensor: torchvision's tensor grid_sample takes NEAREST and BILINEAR")
    return mode


def _warp_fill(args, channels, state):
    """The classes' fill, one value per channel (torchvision's forward makes a list, so the
    mask path always runs); F.rotate/affine/perspective with fill=None: none."""
    if getattr(state, "float_fill_none", False):
        return None
    fill = args.get("fill", 0)
    fill = [0.0] if fill is None else (fill if isinstance(fill, list) else [fill])
    if len(fill) == 1:
        return [float(fill[0])] * channels
    if len(fill) != channels:
        raise ValueError(f"flowloader.transforms: fill {fill} cannot broadcast to the image's "
                         f"{channels} channels (torchvision's tensor check): give one value "
                         "or one per channel")
    return [float(v) for v in fill]


def _rotation(a, op, args, params, state):
    h, w = a.shape[1], a.shape[2]
    matrix = _inverse_affine(-float(params[0]), [0.0, 0.0], 1.0, [0.0, 0.0],
                             _center(args, w, h))
    ow, oh = _expanded_size(matrix, w, h) if args.get("expand") else (w, h)
    return _core()._float_warp(a, "affine", matrix, oh, ow, _warp_mode(args, op.name),
                               _warp_fill(args, a.shape[0], state))


def _affine(a, op, args, params, state):
    angle, tx, ty, scale, shx, shy = (float(v) for v in params[:6])
    matrix = _inverse_affine(angle, [tx, ty], scale, [shx, shy],
                             _center(args, a.shape[2], a.shape[1]))
    return _core()._float_warp(a, "affine", matrix, a.shape[1], a.shape[2],
                               _warp_mode(args, op.name), _warp_fill(args, a.shape[0], state))


def _perspective(a, op, args, params, state):
    h, w = a.shape[1], a.shape[2]
    v = [float(x) for x in params]
    end = [v[0:2], v[2:4], v[4:6], v[6:8]]
    start = [v[8:10], v[10:12], v[12:14], v[14:16]] if len(v) >= 16 else [
        [0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]]
    # 24 params: the coefficients torch's float32 least squares gave (torchvision's own,
    # _T._perspective_solution), else solved here.
    coeffs = v[16:24] if len(v) == 24 else _perspective_coeffs(start, end)
    return _core()._float_warp(a, "perspective", coeffs, h, w,
                               _warp_mode(args, op.name), _warp_fill(args, a.shape[0], state))


def _elastic(a, op, args, params):
    """ElasticTransform: its grid from the two noise planes, grid_sample in float32 (a
    float64 image is sampled as float32 and given back as float64, as torchvision's
    _cast_squeeze_in / _cast_squeeze_out do)."""
    noise = np.asarray(params, np.float32)
    fill = args.get("fill", 0)
    fill = float(fill[0] if isinstance(fill, list) else (0 if fill is None else fill))
    out = _core()._float_elastic(np.ascontiguousarray(a, np.float32), noise,
                                 [float(v) for v in args["alpha"]],
                                 [float(v) for v in args["sigma"]],
                                 _warp_mode(args, op.name), [fill] * a.shape[0])
    return out.astype(a.dtype) if a.dtype != np.float32 else out


# The kernels that read the state too (the functional's fill=None).
_WARPS = {"random_rotation": _rotation, "random_affine": _affine,
          "random_perspective": _perspective}


_KERNELS = {
    "random_horizontal_flip": _gather,
    "random_vertical_flip": _gather,
    "center_crop": _gather,
    "random_crop": _random_crop,
    "pad": _pad_op,
    "resize": _resize,
    "random_resized_crop": _random_resized_crop,
    "color_jitter": _color_jitter,
    "grayscale": _grayscale,
    "random_grayscale": _grayscale,
    "random_invert": lambda a, op, args, params: _colour("invert", a),
    "random_solarize": _solarize,
    "adjust_gamma": lambda a, op, args, params: _colour(
        "gamma", a, args["gamma"], args.get("gain", 1)),
    "random_adjust_sharpness": lambda a, op, args, params: _colour(
        "sharpness", a, args["sharpness_factor"]),
    "random_autocontrast": lambda a, op, args, params: _colour("autocontrast", a),
    "gaussian_blur": _gaussian_blur,
    "elastic_transform": _elastic,
}

# The kernels that take (and may give) a view of the image: the pixel moves, and the
# resizes (_float_resize reads a crop in place).
_VIEWS = (_gather, _random_crop, _pad_op, _resize, _random_resized_crop)

# Ops torchvision's tensor kernels take only as uint8.
_UINT8_ONLY = ("random_posterize", "random_equalize")
_POLICIES = ("auto_augment", "rand_augment", "trivial_augment_wide", "aug_mix")


def refusal(op, dtype):
    """The TypeError for op `op` on a float tensor of `dtype` it does not take."""
    if op.name in _UINT8_ONLY:
        return TypeError(f"flowloader.transforms: {op.name} takes uint8 pixels, got a "
                         f"{dtype} tensor (torchvision's tensor kernel takes only uint8): "
                         "put it before ToTensor, or convert with "
                         "ConvertImageDtype(torch.uint8)")
    why = (" (torchvision's policies take uint8 tensors: their posterize and equalize do)"
           if op.name in _POLICIES else "")
    # The ops float tensors take are listed in the docs, not here: the list made this
    # line ~580 characters long.
    return TypeError(f"flowloader.transforms: {op.name} on a float tensor is not supported"
                     f"{why}: put it before ToTensor, or convert with "
                     "ConvertImageDtype(torch.uint8) (float tensors take the ops in "
                     "docs/python.md, \"Float tensors\")")


# What running an op needs, by op (the op object itself: kept alive here, so an id is never
# reused): (warp, kernel, its {arg: value}, whether the kernel reads dense planes).
_PLANS = {}


def plan(op):
    """(warp, kernel, args, dense) for `op`: a warp (it reads the state too) or a kernel,
    both None when float tensors do not take the op."""
    found = _PLANS.get(op)
    if found is None:
        warp = _WARPS.get(op.name)
        kernel = _KERNELS.get(op.name) if warp is None else None
        found = (warp, kernel, args_of(op), kernel not in _VIEWS)
        if len(_PLANS) >= 1024:
            _PLANS.clear()
        _PLANS[op] = found
    return found


def run(state, op, params):
    """Runs `op` with `params` on every image of `state` (float [C, H, W] arrays) now."""
    warp, kernel, args, dense = plan(op)
    if warp is None and kernel is None:
        raise refusal(op, state.tensor_dtype or "torch.float32")
    state.flush()
    out = []
    for a in state.items:
        if state.channels == 1 and a.shape[0] == 3:
            a = a[:1]  # Three equal planes of a one-channel image.
        if dense:  # The kernels read C-contiguous planes.
            a = np.ascontiguousarray(a)
        out.append(warp(a, op, args, params, state) if warp is not None
                   else kernel(a, op, args, params))
    state.items = out
    state._size = state._measured_size()


def native_ready(a, name):
    """A float image as the native float ops (normalize, random_erasing) take it:
    float32 [3, H, W]."""
    if a.dtype != np.float32:
        raise TypeError(f"flowloader.transforms: {name} on a {a.dtype} tensor is not "
                        "supported: it takes float32 (convert with .float())")
    if a.shape[0] == 1:
        a = np.repeat(a, 3, axis=0)
    return np.ascontiguousarray(a)
