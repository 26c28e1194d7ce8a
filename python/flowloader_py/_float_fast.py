"""One transform, or one functional call, on one float tensor [C, H, W]: the same kernels
as _float.run, without _eager.State (docs/performance.md, "Float tensors").

torchvision answers a crop with a view in ~4 µs and a 224² flip or invert in ~12-17 µs;
the general path (a State, its lazy item list, the result's rebuild) cost ~11 µs of
Python before any pixel. Here a call on a plain CPU float32/float64 tensor of 3
dimensions, C 1 or 3, that needs no gradient, to a transform whose `_eager` only asks
the state for its size and queues one op (Transform's own, CenterCrop's, RandomCrop's,
RandomResizedCrop's, Grayscale's; their draws unchanged, so the same torch generator
state gives the same output), or maps the floats (Normalize's), runs that op at once on
the tensor's numpy view through _float's kernel table. Anything else (a batch, uint8, a
Compose, ToTensor, a native float op such as RandomErasing) returns NO and takes the
general path, whose checks and refusals are the ones users see.
"""

import numpy as np

from flowloader import _float

NO = object()  # "Not taken here": the caller runs the general path.

# torch's float dtypes and from_numpy, once the first tensor is seen (learn()).
_TORCH = {}

# The ops that are their box and nothing more once a box that fits is cut (CenterCrop's
# F.center_crop box, RandomCrop's corner without padding): the view is the output.
_BOX_ONLY = ("center_crop", "random_crop")


def learn(torch):
    """Keeps what the fast path needs of torch (called by _eager when it imports it)."""
    _TORCH["dtypes"] = (torch.float32, torch.float64)
    _TORCH["from_numpy"] = torch.from_numpy


def _takes(t):
    """Whether tensor t is one float image this path takes as the general path would:
    float32/float64 [C, H, W], C 1 or 3, non-empty, on the CPU, no autograd."""
    dtypes = _TORCH.get("dtypes")
    if dtypes is None or t.dtype not in dtypes or t.ndim != 3 or t.requires_grad:
        return False
    c, h, w = t.shape
    return (c == 1 or c == 3) and h > 0 and w > 0 and t.is_cpu


class _One:
    """The _eager.State calls a one-op transform makes (size, native, channels), on one
    float [C, H, W] array, each op run at once."""

    __slots__ = ("t", "a", "channels", "float_fill_none", "tensor_dtype")
    kind = "tensor"
    is_float = True

    def __init__(self, t, fill_none=False):
        self.t = t              # The tensor given (given back when no op ran).
        self.a = None           # The output array once an op ran.
        self.channels = t.shape[0]
        self.float_fill_none = fill_none
        self.tensor_dtype = t.dtype

    def size(self):
        a = self.a
        if a is None:
            s = self.t.shape
            return s[2], s[1]
        return a.shape[2], a.shape[1]

    def native(self, op, params, box=None, corner=True):
        """_eager.State.native then _float.run, for the image's only op."""
        if params is None:
            return
        a = self.a if self.a is not None else self.t.numpy()
        if box is not None and self.a is None:
            top, left, height, width = map(int, box)
            if (0 <= top and 0 <= left and top + height <= a.shape[1]
                    and left + width <= a.shape[2] and height > 0 and width > 0):
                a = a[:, top:top + height, left:left + width]
                if op.name in _BOX_ONLY:
                    self.a = a
                    return
                if corner:
                    params = [0, 0] + list(params[2:])
        if a.shape[1] > _float.MAX_SIDE or a.shape[2] > _float.MAX_SIDE:
            _float.check_sides(a.shape, a.shape[1], a.shape[2])  # Before any copy.
        warp, kernel, args, dense = _float.plan(op)
        if warp is None and kernel is None:
            raise _float.refusal(op, self.tensor_dtype)
        if dense:  # The kernels read C-contiguous planes.
            a = np.ascontiguousarray(a)
        self.a = (warp(a, op, args, params, self) if warp is not None
                  else kernel(a, op, args, params))

    def map_float(self, fn):
        """_eager.State.map_float (Normalize's): fn of the float array, its dtype kept."""
        a = self.a if self.a is not None else self.t.numpy()
        _float.check_sides(a.shape, a.shape[1], a.shape[2])  # fn makes an array of a's size.
        self.a = np.ascontiguousarray(fn(a), dtype=a.dtype)

    def result(self):
        """The output tensor (_eager.State._result_tensor's), or the tensor given when no
        op ran."""
        a = self.a
        if a is None:
            return self.t
        out = _TORCH["from_numpy"](a)
        return out[:1] if self.channels == 1 and a.shape[0] != 1 else out


# How a transform class's _eager runs here, by class: 1, one native op (Transform's
# own, CenterCrop's, RandomCrop's, RandomResizedCrop's, Grayscale's); 2, Normalize's
# (map_float); 0, not here.
_ELIGIBLE = {}


def _eligible(cls):
    from flowloader import transforms as T
    eager = getattr(cls, "_eager", None)
    if eager is T.Normalize._eager:
        return 2
    return int(eager in (T.Transform._eager, T.CenterCrop._eager, T.RandomCrop._eager,
                         T.RandomResizedCrop._eager, T.Grayscale._eager))


def call(transform, t, generator):
    """transform(t) on float tensor t, or NO (the general path's case)."""
    cls = type(transform)
    how = _ELIGIBLE.get(cls)
    if how is None:
        how = _ELIGIBLE[cls] = _eligible(cls)
    if not how or not _takes(t):
        return NO
    one = _One(t)
    try:
        if how == 1 and transform._native(one).reads_float:  # random_erasing: _eager_run's.
            return NO
    except (TypeError, ValueError):
        return NO  # The general path refuses it (after the coin, where torchvision does).
    transform._eager(one, generator)
    return one.result()


def run(t, op, params, box, fill_none):
    """One functional op with its parameters on float tensor t, or NO."""
    if op.reads_float or not _takes(t):
        return NO
    one = _One(t, fill_none)
    one.native(op, params, box=box)
    return one.result()
