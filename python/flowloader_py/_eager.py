"""flowloader.transforms called on one image (docs/python.md, "Calling transforms directly").

The pixels come from the native ops (the loader's Op::Apply, through _flowloader._eager_run,
or _pil_run for a PIL image, which reads and writes Pillow's own rows; the GIL released);
this file only converts the caller's image to the native form and back, and keeps a run
of native ops together so that they run in one call:

    PIL image (RGB or L)     -> uint8 [H, W, 3]   -> a PIL image of the same mode
    numpy uint8 [H, W, 3] / [H, W, 1] / [H, W]   -> the same shape
    torch uint8 [..., C, H, W], C in (1, 3)      -> the same shape and dtype
    torch float32 / float64 [..., C, H, W]       -> the same dtype: torchvision's tensor
                                                    kernels (_float.py), not PIL's

One-channel images run as three equal channels (every op keeps them equal) and come back
with one. A batch [B, C, H, W] takes one draw of the parameters for all its images, as
torchvision's tensor transforms do.
"""

import numpy as np

_ACCEPTED = ("a PIL image (mode RGB or L), a numpy uint8 array [H, W, 3], [H, W, 1] or "
             "[H, W], or a torch tensor [..., C, H, W] with C 1 or 3 (uint8, float32 or "
             "float64)")


# The modules, imported on first use (torch and PIL only when an image needs them) and
# kept: a `from X import Y` per call cost ~0.5 µs each, several per eager call.
_MODULES = {}


def _core():
    m = _MODULES.get("core")
    if m is None:
        from flowloader import _flowloader  # The extension, next to this file.
        m = _MODULES["core"] = _flowloader
    return m


def _torch():
    m = _MODULES.get("torch")
    if m is None:
        global _TENSOR
        import torch
        m = _MODULES["torch"] = torch
        _fast().learn(torch)
        _TENSOR = torch.Tensor
    return m


# torch.Tensor once torch is imported here: a float tensor of it takes _float_fast first.
_TENSOR = None


def _fast():
    m = _MODULES.get("fast")
    if m is None:
        from flowloader import _float_fast as m  # One op on one float tensor.
        _MODULES["fast"] = m
    return m


def _float():
    m = _MODULES.get("float")
    if m is None:
        from flowloader import _float as m  # The float tensor kernels' half (_float.py).
        _MODULES["float"] = m
    return m


def _pil():
    m = _MODULES.get("pil")
    if m is None:
        from PIL import Image
        m = _MODULES["pil"] = Image
    return m


def _run_error(error):
    """A native op's ValueError as the class torchvision's call raises there too: a pad
    whose negative padding crops the whole image away is torch's RuntimeError on a tensor
    (PIL's crop: its ValueError), so both."""
    if "crops away all" in str(error):
        from flowloader.transforms import _TorchRuntimeError
        return _TorchRuntimeError(str(error))
    return error


class _ModeError(TypeError, ValueError, OSError):
    """A PIL mode the native ops do not take (RGBA, P, I;16, CMYK, ...): flowloader's
    TypeError, and the ValueError / OSError PIL and torchvision raise where an operation
    lacks the mode (ImageOps' "not supported for this image mode", F.adjust_hue's)."""


def _is_pil(img):
    try:
        return isinstance(img, _pil().Image)
    except ImportError:
        return False


def _is_tensor(img):
    return type(img).__module__.startswith("torch") and hasattr(img, "dtype") and hasattr(
        img, "shape")


def _three(arr):
    """An [H, W] uint8 array as [H, W, 3] (equal channels), C-contiguous."""
    return np.ascontiguousarray(np.repeat(arr[:, :, None], 3, axis=2))


def _check_size(h, w, what):
    if h < 1 or w < 1:
        raise ValueError(f"flowloader.transforms: an empty image ({what}, {w}x{h}): width and "
                         "height must be at least 1")


def _tensor_item(chw, is_float):
    """One [C, H, W] tensor as the native form: uint8 [H, W, 3], or float [C, H, W] of
    its dtype (float32, float64; _float.native_ready makes three planes where a native
    float op needs them)."""
    if is_float:
        return chw.numpy()  # A view: _float.py copies where a kernel needs it.
    hwc = chw.permute(1, 2, 0).numpy()
    return _three(hwc[:, :, 0]) if hwc.shape[2] == 1 else np.ascontiguousarray(hwc)


def _rows(im):
    """The row-pointer array of a loaded PIL core image, or None (another Pillow)."""
    ptrs = getattr(im, "unsafe_ptrs", None)  # (("image8", p), ("image32", p), ("image", p))
    if ptrs and ptrs[-1][0] == "image":
        return ptrs[-1][1]
    return dict(ptrs).get("image") if ptrs else None


def _pil_pixels(img, box=None):
    """uint8 [H, W, 3] of a PIL RGB or L image (L: three equal channels), or of its box
    (left, top, width, height)."""
    img.load()
    rows = _rows(img.im)
    left, top, width, height = box if box is not None else (0, 0) + tuple(img.size)
    if rows:
        return _core()._pil_read(rows, img.mode, img.size[0], img.size[1], left, top, width,
                                 height)
    arr = np.array(img)[top:top + height, left:left + width]
    return _three(arr) if img.mode == "L" else np.ascontiguousarray(arr)


def _new_pil(mode, size):
    """A new PIL image of `mode` (RGB or L) and `size` whose pixels are not written yet,
    for the native call that writes every row of it.

    Pillow's own operations (transpose, crop, point) write into an image it allocates
    without clearing (ImagingNewDirty); from Python, Image.new and Image.core.new both
    clear theirs first (a memset of 4 MiB at 1024² RGB: as long as a flip's own copy).
    So the pixels live in an unwritten buffer (_pixel_buffer: a bytearray) that the
    image maps as its rows (Image.core.map_buffer, what Image.frombuffer uses; the image
    holds the buffer): an ordinary writable PIL image, RGB rows of 4 bytes a pixel as
    Pillow's. Measured at 1024², one core, CPU time: Image.core.new 42 us, this 3 us
    (docs/performance.md). A Pillow without map_buffer gets Image.new's cleared image."""
    Image = _pil()
    w, h = size
    if hasattr(Image.core, "map_buffer"):
        buf = _core()._pixel_buffer(w * h * (1 if mode == "L" else 4))
        return Image.Image()._new(Image.core.map_buffer(buf, (w, h), "raw", 0, (mode, 0, 1)))
    return Image.Image()._new(Image.core.new(mode, (w, h)))


def _to_pil(arr, mode):
    """A PIL image of `mode` (RGB, or L from channel 0) from uint8 [H, W, 3]."""
    Image = _pil()
    out = _new_pil(mode, (arr.shape[1], arr.shape[0]))
    rows = _rows(out.im)
    if rows:
        _core()._pil_write(rows, mode, arr)
        return out
    return Image.fromarray(np.ascontiguousarray(arr[:, :, 0]) if mode == "L" else arr, mode)


class State:
    """The image being transformed: `items` (one array per image of a batch: uint8
    [H, W, 3] or float32 [3, H, W]), how to give it back, and the native ops not run yet."""

    def __init__(self, img):
        self.kind = None         # "pil", "numpy" or "tensor": the form given back.
        self.channels = 3        # 1 for L, [H, W], [.., 1, H, W]: given back with one.
        self.numpy_2d = False    # A numpy [H, W] given: given back as [H, W].
        self.lead = ()           # A tensor's leading (batch) dims.
        self.tensor_dtype = None
        self.is_float = False
        self.pending_ops = []
        self.pending_params = []
        self._size = None        # (width, height) after the pending ops; None: unknown.
        self._raw = img          # Given back untouched when no op ran (Compose([])).
        self._pil = None         # A PIL image read through its rows (_from_pil),
        self._pil_rows = None    # and its row pointers.
        self._box = None
        self.items = None        # Made from _raw when an op first needs pixels.
        self._refusal = None     # Why the native ops cannot take _raw (kind "raw").
        try:
            if _is_pil(img):
                self._from_pil(img)
            elif isinstance(img, np.ndarray):
                self._from_numpy(img)
            elif _is_tensor(img):
                self._from_tensor(img)
            elif isinstance(img, (tuple, list)):
                self.kind = "several"  # FiveCrop's output: given on to the next (a Lambda).
                self._size = (0, 0)
            else:
                raise TypeError(f"flowloader.transforms: cannot transform a "
                                f"{type(img).__module__}.{type(img).__qualname__}: it takes "
                                f"{_ACCEPTED}")
        except (TypeError, ValueError) as e:
            # Kept as it is until an op needs its pixels (refused then, with this error):
            # a Lambda takes anything, as torchvision's does (Compose([Lambda(lambda im:
            # im.convert("RGB")), ...]) of a CMYK image, a Lambda returning a label).
            self.__dict__.update(kind="raw", _refusal=e, _size=None, _pil=None,
                                 channels=3, is_float=False, lead=(), numpy_2d=False)

    def _check_pixels(self):
        """Raises why the native ops cannot take the image (kind "raw")."""
        if self._refusal is not None:
            raise type(self._refusal)(*self._refusal.args)

    def _ensure_items(self):
        self._check_pixels()
        if self.items is None:
            self.items = self._make_items()

    # -- in ---------------------------------------------------------------------------
    def _from_pil(self, img):
        self.kind = "pil"
        if img.mode not in ("RGB", "L"):
            raise _ModeError(f"flowloader.transforms: PIL image mode {img.mode!r} is not "
                            "supported: it takes mode RGB or L (convert first, e.g. "
                            "img.convert('RGB'))")
        w, h = img.size
        _check_size(h, w, f"PIL {img.mode}")
        self._size = (w, h)
        self.channels = 1 if img.mode == "L" else 3

        self._make_items = lambda box=None: [_pil_pixels(img, box)]
        img.load()
        self._pil_rows = _rows(img.im)
        # Its rows are read by _pil_run (None: a Pillow without unsafe_ptrs).
        self._pil = img if self._pil_rows else None
        self._box = (0, 0, w, h)  # The part of it read (left, top, width, height).

    def _from_numpy(self, arr):
        self.kind = "numpy"
        if arr.dtype != np.uint8:
            raise TypeError(f"flowloader.transforms: a numpy array of dtype {arr.dtype} is not "
                            "supported: it takes uint8 [H, W, 3], [H, W, 1] or [H, W] (HWC, "
                            "as np.asarray(pil_image))")
        if arr.ndim == 2:
            self.numpy_2d = True
            arr = arr[:, :, None]
        if arr.ndim != 3 or arr.shape[2] not in (1, 3):
            raise ValueError(f"flowloader.transforms: a numpy array of shape {arr.shape} is not "
                             "an image it takes: uint8 [H, W, 3], [H, W, 1] or [H, W]")
        _check_size(arr.shape[0], arr.shape[1], f"numpy {arr.shape}")
        self._size = (arr.shape[1], arr.shape[0])
        self.channels = arr.shape[2]

        def make(box=None):
            a = arr if box is None else arr[box[1]:box[1] + box[3], box[0]:box[0] + box[2]]
            _float().check_sides(arr.shape, a.shape[0], a.shape[1])  # Before the copy.
            return [_three(a[:, :, 0]) if a.shape[2] == 1 else np.ascontiguousarray(a)]
        self._make_items = make

    def _from_tensor(self, t):
        torch = _torch()
        self.kind = "tensor"
        if t.ndim < 3 or t.shape[-3] not in (1, 3):
            raise ValueError(f"flowloader.transforms: a tensor of shape {tuple(t.shape)} is not "
                             "an image it takes: [..., C, H, W] with C 1 or 3")
        if t.dtype not in (torch.uint8, torch.float32, torch.float64):
            raise TypeError(f"flowloader.transforms: a tensor of dtype {t.dtype} is not "
                            "supported: it takes uint8, float32 (ToTensor's output) or "
                            "float64; convert with ConvertImageDtype or .float()")
        if t.device.type != "cpu":
            raise TypeError(f"flowloader.transforms: a tensor on {t.device} is not supported: "
                            "the ops run on the CPU (call .cpu() first)")
        _check_size(t.shape[-2], t.shape[-1], f"tensor {tuple(t.shape)}")
        if t.numel() == 0:
            raise ValueError(f"flowloader.transforms: a tensor of shape {tuple(t.shape)} "
                             "holds no image: a batch needs at least one")
        self.lead = tuple(t.shape[:-3])
        self.tensor_dtype = t.dtype
        self.channels = t.shape[-3]
        self.is_float = t.dtype in (torch.float32, torch.float64)
        self._size = (t.shape[-1], t.shape[-2])

        is_float = self.is_float  # As given (native() moves self.is_float ahead).

        def make(box=None):
            flat = t.detach().reshape((-1,) + tuple(t.shape[-3:]))
            if box is not None:
                flat = flat[..., box[1]:box[1] + box[3], box[0]:box[0] + box[2]]
            # Before _tensor_item's copy (uint8) or the float kernels' (a stride-0
            # expand() of 100000² is three values, its copy 28 GiB).
            _float().check_sides(t.shape, flat.shape[-2], flat.shape[-1])
            return [_tensor_item(flat[b], is_float) for b in range(flat.shape[0])]
        self._make_items = make

    # -- the native ops ---------------------------------------------------------------
    def _measured_size(self):
        a = self.items[0]
        return (a.shape[2], a.shape[1]) if self.is_float else (a.shape[1], a.shape[0])

    def size(self):
        """(width, height) after everything queued so far (runs the queue if needed)."""
        self._check_pixels()
        if self.kind == "several":  # A draw needs one image's size: (0, 0) divided by 0.
            raise TypeError(f"flowloader.transforms: a random crop or draw takes one image, "
                            f"got a {type(self._raw).__name__} of {len(self._raw)} (FiveCrop/"
                            "TenCrop's crops: handle them with a Lambda)")
        if self._size is None:
            self.flush()
        return self._size

    def replace(self, img):
        """Goes on from `img` (what a Lambda or FiveCrop made)."""
        self.__init__(img)

    def native(self, op, params, box=None, corner=True):
        """Queues native op `op` (an _EagerOp) with `params` (None: skipped). `box`:
        (top, left, height, width) of a crop the op takes first (random_resized_crop,
        random_crop without padding, center_crop that fits), params[:2] its corner when
        `corner`: an image not read yet is then read as that box alone, the op getting
        corner (0, 0), the same pixels for a fraction of the copying."""
        if (box is not None and params is not None and self.items is None
                and not self.pending_ops and self.kind in ("pil", "numpy", "tensor")):
            top, left, height, width = (int(v) for v in box)
            w, h = self._size
            if 0 <= top and 0 <= left and top + height <= h and left + width <= w and (
                    height > 0 and width > 0) and self._pil is not None:
                self._box = (left, top, width, height)
                self._size = (width, height)
                params = [0, 0] + list(params[2:]) if corner else params
            elif 0 <= top and 0 <= left and top + height <= h and left + width <= w and (
                    height > 0 and width > 0):
                make = self._make_items
                self._make_items = lambda: make((left, top, width, height))
                self._size = (width, height)
                params = [0, 0] + list(params[2:]) if corner else params
        self._check_pixels()
        if self.kind == "several":
            raise TypeError(f"flowloader.transforms: {op.name} takes one image, got a "
                            f"{type(self._raw).__name__} of {len(self._raw)} (FiveCrop/TenCrop's "
                            "crops: handle them with a Lambda)")
        if params is None:
            return
        if self.is_float and not op.reads_float:
            _float().run(self, op, params)  # torchvision's tensor kernel, now.
            return
        if op.reads_float != self.is_float:
            self._wrong_form(op)
        self.pending_ops.append(op)
        # A numpy array (ElasticTransform's noise planes: 2 x H x W values) is listed
        # in C, not float() by float().
        self.pending_params.append(params.astype(np.float64).tolist() if isinstance(
            params, np.ndarray) else [float(v) for v in params])
        if op.writes_float:
            self.is_float = True
        w, h = self._size if self._size is not None else (0, 0)
        out = op.output_size(w, h) if self._size is not None else (0, 0)
        self._size = out if out[0] > 0 and out[1] > 0 else None

    def _wrong_form(self, op):
        if op.reads_float:
            raise TypeError(f"flowloader.transforms: {op.name} works on a float tensor "
                            "[C, H, W] (after ToTensor and Normalize), got a uint8 image")
        raise TypeError(f"flowloader.transforms: {op.name} works on uint8 pixels (a PIL "
                        "image, a uint8 array or tensor), got a float tensor: put it before "
                        "ToTensor, or convert with ConvertImageDtype(torch.uint8)")

    def _pil_run(self, dst=None):
        """Reads the PIL image (its box) and runs the queued ops in one native call: into
        `dst` (a new PIL image of the ops' output size), or to an array."""
        img, (left, top, width, height) = self._pil, self._box
        w, h = img.size
        if dst is None:
            dst_rows, dst_mode, dst_w, dst_h = 0, "", 0, 0
        else:
            dst_rows, dst_mode, (dst_w, dst_h) = _rows(dst.im), dst.mode, dst.size
        try:
            out = _core()._pil_run(self.pending_ops, self.pending_params, self._pil_rows,
                                   img.mode, w, h, left, top, width, height, dst_rows,
                                   dst_mode, dst_w, dst_h)
        except ValueError as e:
            raise _run_error(e) from None
        self.pending_ops, self.pending_params = [], []
        return out

    def flush(self):
        """Runs the queued native ops on every image."""
        if self.items is None and self._pil is not None:
            self.items = [self._pil_run()]
            self._size = self._measured_size()
            return
        self._ensure_items()
        if self.pending_ops:
            if self.pending_ops[0].reads_float:  # normalize, random_erasing: float32 x 3.
                name = self.pending_ops[0].name
                self.items = [_float().native_ready(a, name) for a in self.items]
            run = _core()._eager_run
            try:
                self.items = [run(self.pending_ops, self.pending_params, a) for a in self.items]
            except ValueError as e:
                raise _run_error(e) from None
            self.pending_ops, self.pending_params = [], []
        self._size = self._measured_size()

    # -- conversions between the forms (torchvision's ToTensor and friends) ----------
    def to_float_tensor(self):
        """uint8 pixels -> float32 [C, H, W] in [0, 1] (ToTensor, ConvertImageDtype)."""
        self.native(_normalize_identity(), [])
        self.kind = "tensor"
        self.tensor_dtype = _torch().float32

    def to_uint8_tensor(self):
        """PILToTensor: the uint8 pixels, given back as a uint8 [C, H, W] tensor."""
        self._check_pixels()
        self.kind = "tensor"
        self.tensor_dtype = _torch().uint8

    def float_to_uint8(self):
        """ConvertImageDtype(torch.uint8) of a float tensor: torchvision's
        `image.mul(255 + 1 - 1e-3).to(uint8)`."""
        self.flush()
        self.items = [np.ascontiguousarray(np.repeat(a, 3, axis=0) if a.shape[0] == 1 else a)
                      for a in self.items]
        self.items = [np.ascontiguousarray(
            (a * a.dtype.type(255.999)).astype(np.uint8).transpose(1, 2, 0)) for a in self.items]
        self.is_float = False
        self.tensor_dtype = _torch().uint8
        self._size = self._measured_size()

    def map_float(self, fn):
        """Applies fn to each float [C, H, W] array (Normalize of a float tensor), the
        dtype kept."""
        self.flush()
        self.items = [np.ascontiguousarray(fn(a), dtype=a.dtype) for a in self.items]

    def to_float32(self):
        """ConvertImageDtype(torch.float32) of a float64 tensor."""
        self.map_float(lambda a: a)
        self.items = [a.astype(np.float32) for a in self.items]
        self.tensor_dtype = _torch().float32

    # -- out --------------------------------------------------------------------------
    def result(self):
        """The transformed image, in the form it came in (or ToTensor's)."""
        if self.kind in ("several", "raw"):
            return self._raw
        if self.items is None and not self.pending_ops and (
                self.kind != "tensor" or not _is_pil(self._raw)) and (
                self.kind == "tensor") == _is_tensor(self._raw):
            return self._raw  # Nothing ran: the image itself, as torchvision's Compose([]).
        if (self.kind == "pil" and self.items is None and self._pil is not None
                and not self.is_float and self._size is not None):
            # One native call from the source rows to the new image's.
            out = _new_pil("L" if self.channels == 1 else "RGB", self._size)
            self._pil_run(out)
            return out
        self.flush()
        if self.kind == "tensor" or self.is_float:
            return self._result_tensor()
        a = self.items[0]
        if self.kind == "pil":
            return _to_pil(a, "L" if self.channels == 1 else "RGB")
        if self.channels == 1:
            return np.ascontiguousarray(a[:, :, 0]) if self.numpy_2d else np.ascontiguousarray(
                a[:, :, :1])
        return a

    def _result_tensor(self):
        torch = _torch()
        outs = []
        for a in self.items:
            t = torch.from_numpy(a)
            if not self.is_float:
                t = t.permute(2, 0, 1)
            if self.channels == 1:
                t = t[:1]
            # A float crop stays a view of its image, as torchvision's tensor crop.
            outs.append(t if self.is_float else t.contiguous())
        if not self.lead:
            return outs[0]
        return torch.stack(outs).reshape(self.lead + tuple(outs[0].shape))


_IDENTITY = None


def _normalize_identity():
    """normalize(mean=0, std=1): ToTensor's [0, 1] floats, by the loader's own op."""
    global _IDENTITY
    if _IDENTITY is None:
        _IDENTITY = _core()._EagerOp("normalize(mean=0, std=1)")
    return _IDENTITY


def call(transform, img, generator):
    """transform(img): every transform queues its work on one State (one op on one float
    tensor: _float_fast, the same kernels without the State's ~10 µs)."""
    if type(img) is _TENSOR:
        out = _MODULES["fast"].call(transform, img, generator)
        if out is not _MODULES["fast"].NO:
            return out
    state = State(img)
    transform._eager(state, generator)
    return state.result()
