"""flowloader: a native data loader for PyTorch training loops.

    import flowloader
    with flowloader.DataLoader("/data/imagenet/train", batch_size=64, num_workers=2) as loader:
        for epoch in range(10):
            loader.set_epoch(epoch)
            for images, labels in loader:      # float32 [N,3,224,224], int64 [N]
                train_step(images, labels)

PyTorch's DataLoader names and defaults wherever one exists; every other pipeline
setting (docs/specs.md, "Writing a spec") is a keyword too, or comes from `spec=FILE.yaml`
(keywords given override it). Values go through the same parser as the command line's
flags, so a bad one raises ValueError with the CLI's one-line message; a value of the
wrong Python type raises TypeError.

Zero copy and the hold rule: `images` wraps the pipeline's batch buffer (DLPack); the
buffer goes back to the pool when the last tensor viewing it is freed. A loop may keep
any number of batches: while `hold_limit(prefetch_batches)` = prefetch_batches - 1
batches are still viewed, the next batch is copied into a tensor of its own and its
buffer returned at once, so one buffer always stays with the pipeline and a loop never
waits on batches it holds itself.

Ranks: rank/world_size not given come from RANK/WORLD_SIZE (torchrun), else
SLURM_PROCID/SLURM_NTASKS, else an initialised torch.distributed group, else the spec's
shard, else 0 of 1; `loader.shard_source` says which.

Threads: iteration is for one thread at a time. The GIL is released while waiting for a
batch; Ctrl-C raises KeyboardInterrupt within 50 ms, and a new loop over the loader then
continues exactly where the interrupted one stopped (no batch lost or repeated); close()
(or `del`, or leaving the `with`) stops the pipeline's threads within about 0.3 s even
while a Dataset's __getitem__ blocks (the blocked call is abandoned, named in a warning
and in stats()["abandoned_calls"]). Calls into a loader from inside a Dataset's
__getitem__ or a transforms.Lambda (close, state_dict, set_epoch, iterating) raise
RuntimeError. Loaders do not survive fork: a forked child exits normally, and using an
inherited loader there raises RuntimeError (make a new one in the child).
"""

import atexit
import difflib
import json
import operator
import os
import threading
import time
import weakref

import torch
from torch.utils.dlpack import from_dlpack

from . import _flowloader as _core
from . import transforms
from ._flowloader import DataError

__all__ = ["DataLoader", "DataError", "PaddedImages", "hold_limit", "shard_from_environment", "transforms"]

_SPEC_KEYS = {k["name"]: k for k in _core.spec_keys() if k["is_scalar"]}
# Keywords that are the DataLoader's own, not spec keys.
_OWN_KEYWORDS = ("data", "dataset", "spec", "rank", "world_size", "metrics_address", "return_keys",
                 "sources", "return_sources", "return_columns", "stages", "batch_ops")
# Keys set from JSON through the spec's own parser (ApplySpecYamlValue), not flag text.
_STRUCTURED_KEYS = ("sources", "stages", "batch_ops")
# Keywords that configure the built-in stages, which transform=Compose or stages= replace.
_BUILTIN_STAGE_KEYWORDS = ("transform", "image_size", "layout")
_STATE_VERSION = 1
# Keys whose default is "auto" that otherwise take a count (the others with an "auto"
# default, device and s3_addressing, take words).
_COUNT_OR_AUTO_KEYS = ("num_workers", "prefetch_batches", "read_ahead")
# Values quoted in messages are cut to this many characters.
_MAX_VALUE_CHARS = 200
# The largest epoch or batch number a loader accepts: the pipeline counts in int64 and
# adds to them.
_MAX_COUNT = 2**62
# torch.utils.data.DataLoader's keywords that flowloader has no counterpart of, and what
# does their work here (sampler= read as a typo of epoch_samples= before).
_SAMPLER_WORK = ("flowloader's own sampler picks the indices (shuffle, seed, rank/world_size, "
                 "epoch_samples, repeated_augment, set_epoch)")
_TORCH_ONLY_KEYWORDS = {
    "sampler": _SAMPLER_WORK,
    "batch_sampler": _SAMPLER_WORK + " and batch_size makes the batches",
    "collate_fn": "batches are collated natively (a Compose's ToTensor/Normalize set the "
                  "layout; dataset= items' third elements come as a list)",
    "worker_init_fn": "workers are threads of this process, not processes: nothing to "
                      "initialise",
    "multiprocessing_context": "workers are threads of this process, not processes",
    "persistent_workers": "the workers persist across epochs always",
    "prefetch_factor": "use prefetch_batches (batch buffers in flight)",
    "timeout": "a next() waits until its batch comes; Ctrl-C ends the wait",
    "generator": "use seed= (and set_epoch) for the shuffle and the random transforms",
    "pin_memory_device": "use device=",
}
# Why a DataLoader is not copied or pickled.
_NO_COPY = ("a flowloader.DataLoader cannot be copied or pickled (its threads and batch "
            "buffers belong to it, in this process): make another DataLoader with the same "
            "arguments (in a spawned process, from arguments you pass it)")
# A stashed result of _core.next: nothing stashed (None is an end of epoch).
_NOTHING = object()


def _short(value):
    """repr(value) on one line, cut to _MAX_VALUE_CHARS characters."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error.
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split("\n"))
    if len(text) > _MAX_VALUE_CHARS:
        text = f"{text[:_MAX_VALUE_CHARS]}... ({len(text)} characters)"
    return text


def _is_bool(value):
    """A Python or numpy bool (numpy's has __index__, so operator.index takes it)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def _checked_int(name, value, low, high):
    """value as an int in [low, high], or TypeError / ValueError naming `name` and it."""
    if _is_bool(value):
        raise TypeError(f"{name} must be an int, got bool {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} "
                        f"{_short(value)}") from None
    if not low <= number <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {_short(number)}")
    return number


def _path_text(value):
    """A path argument (str, bytes or os.PathLike) as str: bytes as os.fsdecode reads them
    (a non-UTF-8 name keeps its bytes as surrogates), not as their repr "b'...'"."""
    value = os.fspath(value)
    return os.fsdecode(value) if isinstance(value, bytes) else value


def _native_text(text):
    """text for the C++ core, which takes UTF-8: a str holding surrogates (a file name
    that is not UTF-8, as os.fsdecode gives it) goes as its file-system bytes, which name
    the same file (as str it failed pybind11's conversion with its signature dump)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return os.fsencode(text)


# The keys of a state_dict besides the fingerprint's (DataLoader._fingerprint).
_STATE_POSITION_KEYS = ("version", "epoch", "batch", "sample", "current_batch_size")


def _check_state_keys(state, fingerprint):
    """A forged or foreign state_dict, refused in one line: a key state_dict() does not
    write (a typo, another loader's), or a fingerprint value of the wrong type (True for
    world_size=1, 1.0 for shuffle=True compared equal and were taken). numpy ints and
    bools, as a round trip through numpy or torch.save may give, are taken."""
    for key in state:
        if key not in fingerprint and key not in _STATE_POSITION_KEYS:
            raise ValueError(f"state_dict has an unknown key {_short(key)} (its keys: "
                             f"{', '.join(_STATE_POSITION_KEYS + tuple(fingerprint))}): pass a "
                             "dict made by DataLoader.state_dict()")
    for key, mine in fingerprint.items():
        value = state.get(key)
        if isinstance(mine, bool):
            ok = type(value).__name__ in ("bool", "bool_")
        else:
            ok = type(value).__name__ not in ("bool", "bool_") and hasattr(value, "__index__") \
                and getattr(value, "ndim", 0) == 0
        if key in state and not ok:
            raise TypeError(f"state_dict's {key} must be {'a bool' if isinstance(mine, bool) else 'an int'}, "
                            f"got {type(value).__name__} {_short(value)}")


def _check_position(batch, sample, batch_size):
    """ValueError when a state_dict's sample (the position of the next sample, -1 when not
    known) cannot follow `batch` batches: each had 1 to batch_size samples. The pipeline
    resumes at `sample` when it is given, so a forged pair (batch 5, sample 2) resumed
    silently at sample 2, three batches' samples again."""
    if sample != -1 and not batch <= sample <= batch * batch_size:
        raise ValueError(f"state_dict's sample must be in [{batch}, {batch * batch_size}] after "
                         f"batch {batch} (each batch holds 1 to batch_size={batch_size} "
                         f"samples), got {sample}: pass a dict made by DataLoader.state_dict()")


def _refuse_torchvision(name, value):
    """TypeError for a torchvision object where flowloader.transforms' are expected."""
    kind = type(value)
    if kind.__module__.split(".")[0] == "torchvision":
        raise TypeError(f"{name} is {kind.__module__}.{kind.__qualname__}, torchvision's: build "
                        "it with flowloader.transforms instead (import flowloader.transforms "
                        "as T: the same classes and arguments)")


def _inside_callback():
    """Whether this thread runs a Dataset's __getitem__ or a Lambda for a loader."""
    try:
        _core._refuse_inside_callback("")
    except RuntimeError:
        return True
    return False


def _refuse_inside(what):
    """RuntimeError when called from a Dataset's __getitem__ or a transforms.Lambda."""
    _core._refuse_inside_callback(what)


class _Default:
    """An argument left at its default: a spec's value then stands."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return repr(self.value)


def _is_int_key(key):
    default = _SPEC_KEYS[key]["default"]
    if default == "auto":  # num_workers, prefetch_batches, read_ahead: a count or "auto";
        return key in _COUNT_OR_AUTO_KEYS  # device and s3_addressing are words.

    try:
        int(default)
        return True
    except ValueError:
        return False


def _setting_text(key, value):
    """The text the spec parser reads for `value`, or TypeError for a wrong type."""
    spec_key = _SPEC_KEYS[key]
    if key == "device" and type(value).__module__ == "torch" and type(value).__name__ == "device":
        value = str(value)  # torch.device("cpu") -> "cpu", as torch code passes devices.
    kind = type(value).__name__
    if spec_key["is_bool"]:
        if not isinstance(value, bool):
            raise TypeError(f"{key} must be True or False, got {kind} {_short(value)}")
        return "true" if value else "false"
    if key == "max_errors":
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(f"max_errors must be a count, a fraction or a str like '5%', "
                            f"got {kind} {_short(value)}")
        return repr(value) if isinstance(value, float) else str(value)
    if _is_int_key(key):
        if isinstance(value, str):
            return value  # "auto", or digits: read by the parser as the CLI reads them.
        if _is_bool(value):  # numpy's bool too, whose __index__ made True a count of 1.
            raise TypeError(f"{key} must be an int, got bool {value!r}")
        try:
            return str(operator.index(value))
        except TypeError:
            raise TypeError(f"{key} must be an int, got {kind} {_short(value)}") from None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a str, got {kind} {_short(value)}")
    return value


def _int_or_none(name, value):
    if value is None:
        return None
    if _is_bool(value):
        raise TypeError(f"{name} must be an int, got bool {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__} "
                        f"{_short(value)}") from None


def _batch_ops_text(batch_ops):
    """batch_ops= as JSON, YAML's flow style, for the spec's own parser: a list of
    {"type": ..., "name": ..., "options": {...}} dicts, as a spec's batch_ops: items."""
    _refuse_torchvision("batch_ops", batch_ops)
    if isinstance(batch_ops, (list, tuple)):
        for op in batch_ops:
            _refuse_torchvision("an item of batch_ops", op)
        # flowloader.transforms' batch ops (Mosaic, SimpleCopyPaste) as their dicts.
        batch_ops = [op.to_batch_op() if hasattr(op, "to_batch_op") else op
                     for op in batch_ops]
    if not isinstance(batch_ops, (list, tuple)) or not all(isinstance(op, dict)
                                                           for op in batch_ops):
        raise TypeError(f"batch_ops must be a list of {{'type', 'options'}} dicts, "
                        f"got {type(batch_ops).__name__} {_short(batch_ops)}")
    try:
        return json.dumps(list(batch_ops))
    except (TypeError, ValueError) as e:
        raise TypeError(f"batch_ops: {e}") from None


def _sources_text(sources):
    """sources= as JSON, YAML's flow style, for the spec's own parser (which checks the
    names, paths and weights and words the messages as for a spec's sources:)."""
    if not isinstance(sources, (list, tuple)):
        raise TypeError(f"sources must be a list of {{'name', 'data', 'weight'}} dicts, "
                        f"got {type(sources).__name__} {_short(sources)}")
    items = []
    for source in sources:
        if not isinstance(source, dict):
            raise TypeError(f"each source must be a dict {{'name', 'data', 'weight'}}, "
                            f"got {type(source).__name__} {_short(source)}")
        items.append({k: os.fspath(v) if hasattr(v, "__fspath__") else v
                      for k, v in source.items()})
    try:
        return json.dumps(items)
    except TypeError as e:
        raise TypeError(f"sources: {e}") from None


def _stage_item(item):
    """One stages= item with a Compose as its ops turned into the spec's ops list."""
    if not isinstance(item, dict):
        raise TypeError(f"each stage must be a dict like {{'type': 'decode'}}, "
                        f"got {type(item).__name__} {_short(item)}")
    item = dict(item)
    ops = item.get("ops")
    _refuse_torchvision("a stage's ops", ops)
    if isinstance(ops, transforms.Transform):
        ops = ops if isinstance(ops, transforms.Compose) else transforms.Compose([ops])
        item["ops"] = ops.to_spec()
    return item


def _stages_text(stages):
    """stages= as JSON, YAML's flow style, for the spec's own stages: parser."""
    if not isinstance(stages, (list, tuple)):
        raise TypeError(f"stages must be a list of stage dicts, got {type(stages).__name__}")
    try:
        return json.dumps([_stage_item(item) for item in stages])
    except TypeError as e:
        raise TypeError(f"stages: {e}") from None


def _transform_stages(transform):
    """transform= as stages: read, decode, then one transforms item per view. A Compose
    is one view (a tensor); a list gives views view0, view1, ...; a dict {name: Compose}
    names them. Consecutive views holding the same Compose object share one item (one
    list, an independent random draw per view), as a spec's `outputs: [a, b]` does."""
    _refuse_torchvision("transform", transform)
    if isinstance(transform, transforms.Transform):
        views = None
        composes = [transform]
    elif isinstance(transform, dict):
        views = [str(name) for name in transform]
        composes = list(transform.values())
    elif isinstance(transform, (list, tuple)):
        views = [f"view{i}" for i in range(len(transform))]
        composes = list(transform)
    else:
        raise TypeError(f"transform must be 'train', 'eval', a flowloader.transforms.Compose, "
                        f"or a list or dict of them, got {type(transform).__name__} "
                        f"{_short(transform)}")
    if not composes:
        raise ValueError("transform: no views given")
    for c in composes:
        _refuse_torchvision("a view of transform", c)
        if not isinstance(c, transforms.Transform):
            try:
                transforms._check(c)  # TypeError naming the class and the supported ones.
            except TypeError as e:
                raise TypeError(str(e).replace(repr(c), _short(c))) from None
    stages = [{"type": "read"}, {"type": "decode"}]
    for i, c in enumerate(composes):
        item = {"type": "transforms", "ops": c}
        if views is None:
            stages.append(item)
        elif i > 0 and composes[i - 1] is c:
            stages[-1]["outputs"].append(views[i])
        else:
            item["outputs"] = [views[i]]
            stages.append(item)
    return stages


def _check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {_short(value)}")


def hold_limit(prefetch_batches):
    """How many batches a loop may hold zero-copy with `prefetch_batches` buffers before
    the next is copied: prefetch_batches - 1. A non-int or out-of-range value is one
    TypeError or ValueError line (was pybind11's signature dump)."""
    return _core.hold_limit(_checked_int("hold_limit's prefetch_batches", prefetch_batches,
                                         1, 2**31 - 1))


def shard_from_environment():
    """(rank, world_size, source) from RANK/WORLD_SIZE, else SLURM_PROCID/SLURM_NTASKS,
    else an initialised torch.distributed group, else (0, 1, "default")."""
    rank, world_size, source = _core.shard_from_environment()
    if source == "default":
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size(), "torch.distributed"
    return rank, world_size, source


class DataLoader:
    """Batches of (images, labels[, extras][, keys][, sources][, columns]) from an
    ImageFolder root, a list file, tar shards, weighted sources=[{"name", "data",
    "weight"}, ...], or your own dataset=.

    dataset=obj: obj has __len__ and __getitem__(i) returning (sample, label) or (sample,
    label, extras), as a map-style torch Dataset. sample is encoded bytes (JPEG, PNG, ...:
    decoded natively), a uint8 H×W×3 (or grey H×W) numpy array, or a PIL image (its pixels
    are used as they are). flowloader's sampler picks the indices (shuffle, ranks, resume,
    exactly once per epoch) and its worker threads call __getitem__, holding the GIL only
    for that call; then decode and the transform run natively. An exception in
    __getitem__ skips the sample, counted with reason python_error and logged as the
    exception's one line (on_error="fail" raises DataError instead). When items have
    extras, the batch has an `extras` element after labels: a list, one per row. With
    return_keys, a row's key is its index as text.

    transform: "train" or "eval" (the built-in stages, with image_size and layout), or a
    flowloader.transforms.Compose (torchvision's classes as a native op list: one view,
    images a tensor), or a list of them (views view0, view1, ...) or a dict {name:
    Compose} (images a dict name -> tensor). stages=[{"type": ...}, ...] sets the stages
    as a spec's stages: does (a transforms item's "ops" may be a Compose).
    batch_ops=[{"type": "mixup_cutmix", "options": {"mixup_alpha": 0.8, ...}}] (or
    flowloader.transforms' Mosaic() and SimpleCopyPaste() with annotations=) runs batch
    stages on each batch (a spec's batch_ops:); with mixup_cutmix or label_smoothing the
    labels are float32 [N, num_classes] soft targets instead of int64 [N].

    Detection: annotations="instances.json" (COCO instances) with data= the images'
    directory (skip_empty=True drops images without an instance) yields (images, targets)
    as torchvision's detection models take them: images a list of tensors, targets a list
    of dicts {"boxes" float32 [K, 4] xyxy, "labels" int64 [K] (category ids mapped to
    1..C in id order), "iscrowd", "area", "masks" uint8 [K, H, W], "keypoints" float32
    [K, P, 3] (when the file has keypoints), "image_id" int}, every
    tensor a zero-copy view of the batch. With transform=Compose the stages are read,
    annotations, decode, the Compose (its head crop or resize moves the targets) and
    sanitize_bounding_boxes. size_divisibility=32 (0: not rounded) batches images of
    different sizes, from a Compose bounded as torchvision's detection models resize
    (Resize(800, max_size=1333), ScaleJitter, ...): images is then a PaddedImages, the
    list of [3, h, w] views with .tensors (the zero-padded batch [N, 3, Hb, Wb], Hb and Wb
    multiples of it) and .image_sizes; each target's masks are [K, h, w].

    return_sources=True adds each row's source name (a list of str); return_columns=True
    adds the extra per-sample columns (columns= for tar shards, or a list file's
    #columns:) as {name: [str, or bytes where a value is not valid UTF-8]}.

    iter() delivers the rest of the current epoch: a loop that runs to its end takes one
    whole epoch, and the next iter() the next epoch. After a loop left mid-epoch (break,
    an exception, islice), the next iter() continues that epoch from the batch after the
    last one handed out, which is also what state_dict() saves; set_epoch(e) (or
    load_state_dict) starts elsewhere instead. len() is batches per epoch. See the
    module's docstring for the hold rule and the rank sources.
    """

    def __init__(self, data=None, batch_size=_Default(64), num_workers=_Default(2),
                 shuffle=_Default(True), seed=_Default(0), drop_last=_Default(False),
                 prefetch_batches=_Default(3), transform=_Default("train"),
                 image_size=_Default(224), layout=_Default("float_chw"),
                 on_error=_Default("skip"), spec=None, rank=None, world_size=None,
                 metrics_address=None, return_keys=False, device=_Default("auto"),
                 sources=None, return_sources=False, return_columns=False, dataset=None,
                 stages=None, batch_ops=None, **options):
        # A loader made inside a Dataset's __getitem__ or a Lambda could not be closed
        # there (close is refused on a worker thread): dropping it printed "Exception
        # ignored in __del__" and left its threads to the interpreter's exit.
        _refuse_inside("making a DataLoader")
        for key in options:
            if key not in _SPEC_KEYS or key == "data":
                close = difflib.get_close_matches(key, list(_SPEC_KEYS) + list(_OWN_KEYWORDS), 1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                if key in _TORCH_ONLY_KEYWORDS:  # Not a typo: say what stands for it.
                    hint = f": {_TORCH_ONLY_KEYWORDS[key]}"
                raise TypeError(f"DataLoader() got an unexpected keyword argument "
                                f"{_short(key)}{hint}")
        given = dict(batch_size=batch_size, num_workers=num_workers, shuffle=shuffle, seed=seed,
                     drop_last=drop_last, prefetch_batches=prefetch_batches,
                     transform=transform, image_size=image_size, layout=layout,
                     on_error=on_error, device=device, **options)
        if data is not None:
            if not isinstance(data, (str, bytes)) and not hasattr(data, "__fspath__"):
                raise TypeError(f"data must be a path, got {type(data).__name__} {_short(data)}")
            given["data"] = _path_text(data)
        if spec is not None and not isinstance(spec, (str, bytes)) and not hasattr(spec, "__fspath__"):
            raise TypeError(f"spec must be a path, got {type(spec).__name__} {_short(spec)}")
        _check_bool("return_keys", return_keys)
        _check_bool("return_sources", return_sources)
        _check_bool("return_columns", return_columns)
        if sources is not None:
            if "data" in given:
                raise ValueError(f"data ({_short(given['data'])}) and sources are both set: "
                                 "give one of them")
            given["sources"] = _sources_text(sources)
        sanitize = None  # A detection Compose's final SanitizeBoundingBoxes options.
        if not isinstance(transform, (str, _Default)):
            if stages is not None:
                raise ValueError("transform (a Compose) and stages are both set: give one")
            if "annotations" in options:
                transform, sanitize = transforms._split_sanitize(transform)
            stages = _transform_stages(transform)
            given["transform"] = _Default("train")
        if stages is not None and "annotations" in options and transform is not None and \
                not isinstance(transform, (str, _Default)):
            # Detection: the targets are read after the file and sanitized at the end, as
            # torchvision's detection references end with SanitizeBoundingBoxes.
            # A Compose ending with SanitizeBoundingBoxes(min_size, min_area) sets its options.
            stages = [stages[0], {"type": "annotations"}] + stages[1:] + [
                {"type": "sanitize_bounding_boxes", **({"options": sanitize} if sanitize else {})}]
        if stages is not None and "label_maps" in options and transform is not None and \
                not isinstance(transform, (str, _Default)):
            # Segmentation: the label map is read after the image's file; the Compose
            # moves it with the image.
            stages = [stages[0], {"type": "label_map"}] + stages[1:]
        if stages is not None:
            for key in _BUILTIN_STAGE_KEYWORDS:
                if not isinstance(given[key], _Default):
                    raise ValueError(f"{key}={_short(given[key])} configures the built-in stages, "
                                     "which transform= (a Compose) or stages= replace: write "
                                     "it in the ops instead (a crop's size, Normalize)")
            given["stages"] = _stages_text(stages)
        if dataset is not None:
            for name in ("__len__", "__getitem__"):
                if not hasattr(dataset, name):
                    raise TypeError(f"dataset must have __len__ and __getitem__ (a map-style "
                                    f"torch Dataset), {type(dataset).__name__} has no {name}")
            if "data" in given or sources is not None:
                raise ValueError("dataset and data (or sources) are both set: give one of them")
        if batch_ops is not None:
            given["batch_ops"] = _batch_ops_text(batch_ops)
        if metrics_address is not None and not isinstance(metrics_address, str):
            raise TypeError(f"metrics_address must be a str like '127.0.0.1:9464', "
                            f"got {_short(metrics_address)}")
        # A DataLoader's epochs are its loop's: iter() once per epoch, unbounded unless
        # epochs= is given (a spec's epochs key is for the CLI and is not used here).
        if "epochs" not in options:
            given["epochs"] = 0
        # PyTorch-style num_workers=2, prefetch_batches=3 unless a spec says otherwise (the
        # C++ and CLI default for both is "auto", the online autotuner's).
        if spec is None:
            for key in ("num_workers", "prefetch_batches"):
                if isinstance(given[key], _Default):
                    given[key] = given[key].value
        self._settings = [(k, v if k in _STRUCTURED_KEYS else _setting_text(k, v))
                          for k, v in given.items() if not isinstance(v, _Default)]
        self._settings += self._shard_settings(rank, world_size)
        self._spec = None if spec is None else _path_text(spec)
        self._metrics_address = metrics_address or ""
        self._return_keys = return_keys
        self._return_sources = return_sources
        self._return_columns = return_columns
        self._dataset = dataset
        # The Compose objects stay alive with the loader: a T.Lambda's function is found by
        # its id whenever the pipeline is made anew (set_epoch, load_state_dict).
        self._transform = (transform, stages)
        self._core = None
        self._core = self._create_core((0, 0, -1, 0))
        options_now = self._core.options
        self.batch_size = options_now["batch_size"]
        self.rank = options_now["rank"]
        self.world_size = options_now["world_size"]
        self._next_epoch = 0       # The epoch the next iter() delivers.
        self._resume = None        # (epoch, batch, sample, batch_size) from load_state_dict.
        # The epoch under way on self._core. The loader holds it, not the iterator, so
        # that it outlives a loop left with `break` (state_dict, and the next iter()).
        self._run = None
        self._active = None        # weakref to the live _EpochIterator.
        # Held by iter() and by each next(): two threads iterating one loader take turns,
        # instead of one replacing the pipeline (a new iter()'s set_epoch / resume path)
        # under the other's next(), which then raised "the DataLoader is closed" and the
        # epoch restarted from a stale cursor (a sample delivered twice). close() does
        # not take it: it must end a next() waiting for a batch.
        self._iter_lock = threading.RLock()
        self._pid = os.getpid()    # The process that made it (_refuse_forked).

    @property
    def categories(self):
        """With annotations=: the COCO categories, [{"id", "name", "label"}], label being
        what targets' "labels" hold (1..C in id order); [] without annotations."""
        return self._open_core().categories

    @property
    def annotation_skips(self):
        """With annotations=: the annotations dropped, {reason: count} (bad_box, ...)."""
        return self._open_core().annotation_skips

    def _shard_settings(self, rank, world_size):
        rank = _int_or_none("rank", rank)
        world_size = _int_or_none("world_size", world_size)
        env_rank, env_world, source = shard_from_environment()
        self.shard_source = "arguments" if rank is not None and world_size is not None else source
        settings = []
        if source != "default":
            settings += [("world_size", str(env_world)), ("rank", str(env_rank))]
        if world_size is not None:
            settings.append(("world_size", str(world_size)))
        if rank is not None:
            settings.append(("rank", str(rank)))
        return settings

    def _create_core(self, cursor):
        settings = [(k, _native_text(v)) for k, v in self._settings]
        spec = None if self._spec is None else _native_text(self._spec)
        core = _core._Loader(spec, settings, self._metrics_address, list(cursor), self._dataset)
        _open_cores.add(core)
        return core

    def _open_core(self):
        if self._core is None or self._core.closed:
            raise ValueError("the DataLoader is closed")
        return self._core

    # -- iteration ----------------------------------------------------------------------
    def __iter__(self):
        _refuse_inside("iterating a DataLoader")
        self._refuse_forked()
        with self._iter_lock:
            return self._iter_locked()

    def _refuse_forked(self):
        """The core's RuntimeError in a forked child, before the iteration lock: a child
        forked while a thread of the parent waited in next() inherits that lock held, by
        a thread it does not have (its iter() waited for ever)."""
        if os.getpid() != self._pid and self._core is not None:
            self._core.options  # Raises: loaders do not survive fork.

    def _iter_locked(self):
        core = self._open_core()
        previous = self._active() if self._active is not None else None
        if previous is not None:
            previous._retire()  # One iterator drives the pipeline at a time.
        run = self._run
        if run is not None and not run.finished and self._resume is None:
            if self._cursor(core)[0] == run.epoch:
                # A loop left mid-epoch (break, islice): continue where it stopped.
                iterator = _EpochIterator(self, core, run)
                self._active = weakref.ref(iterator)
                return iterator
            # Every batch of that epoch was taken (zip, islice): read its end (or the
            # one a KeyboardInterrupt stashed), it is complete, and this iter() is the
            # next epoch.
            next(_EpochIterator(self, core, run), None)
        target = self._resume or (self._next_epoch, 0, -1, 0)
        epochs = core.options["epochs"]
        if epochs and target[0] > epochs:
            # Checked before the pipeline is closed for a new one, which Create would
            # refuse, leaving the loader closed ("the DataLoader is closed" after).
            raise ValueError(f"epoch {target[0]} is past this loader's epochs={epochs} "
                             f"(epochs 0 to {epochs - 1}, then empty loops): set_epoch below "
                             "it, or make the DataLoader with more epochs")
        here = core.checkpoint()
        # The batch sizes and sample positions matter only for a loaded state.
        if here[:2] != list(target[:2]) or (self._resume and here != list(target)):
            # set_epoch, load_state_dict or an epoch left mid-way: start where asked.
            core.close()
            self._core = core = self._create_core(target)
        self._resume = None
        self._run = _Epoch(target[0], target[1])
        iterator = _EpochIterator(self, core, self._run)
        self._active = weakref.ref(iterator)
        return iterator

    def _finish(self, run):
        run.finished = True
        # Past the last of epochs=E the next loop is empty again, not epoch E + 1 (which
        # the pipeline does not have: the third loop after the end raised and closed it).
        epochs = self._core.options["epochs"] if self._core is not None else 0
        self._next_epoch = min(run.epoch + 1, epochs) if epochs else run.epoch + 1

    def _cursor(self, core):
        """(epoch, batch, sample, batch_size) of the next batch: a batch an interrupted
        __next__ stashed (run.pending) comes first."""
        pending = self._run.pending if self._run is not None else _NOTHING
        if pending is not _NOTHING and pending is not None:
            return [pending[4], pending[5], -1, 0]
        return core.checkpoint()

    def __len__(self):
        return self._open_core().batches_per_epoch

    def set_epoch(self, epoch):
        """The epoch the next iter() delivers (its shuffle and random crops)."""
        _refuse_inside("DataLoader.set_epoch()")
        self._next_epoch = _checked_int("set_epoch's epoch", epoch, 0, _MAX_COUNT)
        self._resume = None
        self._run = None  # An epoch left mid-way is abandoned: epoch `epoch` starts anew.

    def set_batch_size(self, batch_size):
        """Batches from the next one the pipeline plans get `batch_size` rows (at most the
        batch_size the loader was made with: its buffers' rows), e.g. half after an
        out-of-memory error; every sample still comes exactly once (Pipeline::SetBatchSize)."""
        _refuse_inside("DataLoader.set_batch_size()")
        core = self._open_core()
        core.set_batch_size(_checked_int("batch_size", batch_size, 1, 2**31 - 1))

    @property
    def prefetch_batches(self):
        """Batch buffers in effect now (the autotuner's, with prefetch_batches="auto")."""
        return self._open_core().prefetch_batches

    # -- checkpoints (torchdata StatefulDataLoader's convention) -------------------------
    def state_dict(self):
        """Where to resume: the next batch this loader would deliver (the one after the
        last batch handed out, whether or not the loop's iterator still lives), and the
        options that must match for load_state_dict to resume exactly. It is always
        where the next iter() starts."""
        _refuse_inside("DataLoader.state_dict()")
        if self._resume is not None:
            epoch, batch, sample, batch_size = self._resume
        elif self._run is not None and not self._run.finished:
            epoch, batch, sample, batch_size = self._cursor(self._open_core())
        else:
            epoch, batch, sample, batch_size = self._next_epoch, 0, -1, 0
        return {"version": _STATE_VERSION, "epoch": epoch, "batch": batch, "sample": sample,
                "current_batch_size": batch_size, **self._fingerprint()}

    def load_state_dict(self, state):
        """Make the next iter() continue from `state` (from state_dict()): the rest of its
        epoch, exactly the batches the saved loader would have delivered next. A key
        missing, of the wrong type or out of range is a KeyError, TypeError or ValueError
        naming it and its value."""
        _refuse_inside("DataLoader.load_state_dict()")
        self._open_core()  # A closed loader says so first, whatever the state holds.
        if not isinstance(state, dict):
            raise TypeError(f"state must be a dict from state_dict(), got {type(state).__name__}")
        version = state.get("version")
        # An int (a numpy one too), not True or 1.0, which compare equal to 1.
        if type(version).__name__ in ("bool", "bool_") or not hasattr(version, "__index__") \
                or version != _STATE_VERSION:
            raise ValueError(f"state version {_short(version)} is not "
                             f"{_STATE_VERSION}: pass a dict made by DataLoader.state_dict()")
        mine = self._fingerprint()
        _check_state_keys(state, mine)
        for key, value in mine.items():
            if state.get(key) != value:
                raise ValueError(f"state_dict was saved with {key}={_short(state.get(key))} but "
                                 f"this loader has {key}={value!r}: resume with the same options")
        for key in ("epoch", "batch"):
            if key not in state:
                raise KeyError(f"state_dict has no '{key}': pass a dict made by "
                               "DataLoader.state_dict()")
        # A batch has at least one sample (set_batch_size may have made them smaller).
        epoch = _checked_int("state_dict's epoch", state["epoch"], 0, _MAX_COUNT)
        batch = _checked_int("state_dict's batch", state["batch"], 0,
                             mine["samples_per_epoch"])
        sample = _checked_int("state_dict's sample", state.get("sample", -1), -1,
                              mine["samples_per_epoch"])
        batch_size = _checked_int("state_dict's current_batch_size",
                                  state.get("current_batch_size", 0), 0, mine["batch_size"])
        _check_position(batch, sample, mine["batch_size"])
        self._next_epoch = epoch
        self._run = None
        self._resume = (epoch, batch, sample, batch_size)

    def _fingerprint(self):
        o = self._open_core().options
        return {k: o[k] for k in ("seed", "batch_size", "shuffle", "drop_last", "rank",
                                  "world_size")} | {
            "samples_per_epoch": self._core.samples_per_epoch}

    # -- reporting and lifetime ----------------------------------------------------------
    def stats(self):
        """The summary JSON of `flowloader run --summary_json`, as a dict, so far; after
        close(), the one taken at close, with "abandoned_calls" naming the calls of a
        Dataset or Lambda that close() left running (see close)."""
        if self._core is None:
            raise ValueError("the DataLoader is closed")
        if not self._core.closed:
            return json.loads(self._open_core().summary_json())
        summary = json.loads(self._core.summary_json())
        abandoned = list(self._core.abandoned_calls)
        if abandoned:
            summary["abandoned_calls"] = {"count": len(abandoned), "calls": abandoned}
        return summary

    @property
    def source_names(self):
        """The sources by number: their names from sources=, or ["default"] for data."""
        return list(self._open_core().source_names)

    @property
    def outputs(self):
        """Every batch tensor as (name, per-sample shape, dtype): one per augment view.
        With more than one, a batch's images element is a dict name -> tensor."""
        return [(name, tuple(shape), dtype) for name, shape, dtype in self._open_core().outputs]

    @property
    def memory_description(self):
        return self._open_core().memory_description

    @property
    def held_batches(self):
        """Batches whose buffers are still viewed by live tensors (the hold rule)."""
        return self._open_core().live_views

    def close(self):
        """Stop the pipeline and its threads. Tensors still held stay valid; their
        buffers are freed with them. A call of your Dataset's __getitem__ (or a Lambda)
        still blocked after about 0.3 s is abandoned: close() returns, the call finishes
        on its own thread and its result is dropped; a warning and stats() name it."""
        _refuse_inside("DataLoader.close()")
        if self._core is not None:
            self._core.close()

    def __enter__(self):
        return self

    # A shallow copy shared the pipeline, and the first copy garbage-collected closed it
    # under the other ("the DataLoader is closed" on the loop that never closed it); a
    # pickle (multiprocessing's spawn) failed on the C++ object's name.
    def __copy__(self):
        raise TypeError(_NO_COPY)

    def __deepcopy__(self, memo):
        raise TypeError(_NO_COPY)

    def __reduce__(self):
        raise TypeError(_NO_COPY)

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        core = getattr(self, "_core", None)
        if core is not None and not _inside_callback():
            core.close()
        # Inside a callback close() is refused: the core, dropped with this object, lets
        # go of its pipeline instead (PyLoader's destructor), without a traceback.

    def __repr__(self):
        if self._core is None or self._core.closed:
            return "flowloader.DataLoader(closed)"
        o = self._core.options
        data = (f"dataset={type(self._dataset).__name__} of {self._core.samples_per_epoch}"
                if self._dataset is not None else repr(o["data"]))
        return (f"flowloader.DataLoader({data}, batch_size={o['batch_size']}, "
                f"num_workers={o['num_workers']}, rank={o['rank']}/{o['world_size']} "
                f"({self.shard_source}), {self._core.memory_description})")


# Every pipeline not yet closed. Closed at exit, before the interpreter finalizes: a
# dataset='s worker threads call into Python and must stop while it still runs.
_open_cores = weakref.WeakSet()


# Set at exit, before the open loaders are closed (_EpochIterator._next_or_closed).
_exiting = False

# The threads that iterated a loader: at exit, the daemon threads among them still alive
# are given _EXIT_JOIN_SECONDS to end (_close_all).
_iterating_threads = weakref.WeakSet()
_EXIT_JOIN_SECONDS = 0.5


@atexit.register
def _close_all():
    """Closes every open loader at exit, then waits up to _EXIT_JOIN_SECONDS for the
    daemon threads that iterated one: their next() now raises SystemExit, and they drop
    their batches as they end. torch releases the GIL to free a tensor, and a thread
    doing so when the interpreter began to finalize was ended by CPython inside torch's
    gil_scoped_release: std::terminate ("terminate called without an active exception",
    about 1 exit in 150 with daemon threads iterating)."""
    global _exiting
    _exiting = True
    me = threading.current_thread()
    threads = [t for t in list(_iterating_threads) if t is not me and t.is_alive()]
    for core in list(_open_cores):
        core.close()
    deadline = time.monotonic() + _EXIT_JOIN_SECONDS
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def _images(view):
    """One tensor, or with several views a dict name -> tensor (the graph's order)."""
    if isinstance(view, dict):
        return {name: from_dlpack(v) for name, v in view.items()}
    return from_dlpack(view)


def _targets(views, must_copy):
    """The batch's target dicts, each tensor a view of the batch (a copy when must_copy)."""
    out = []
    for row in views:
        target = {}
        for name, value in row.items():
            if name == "image_id":
                target[name] = value
            else:
                tensor = from_dlpack(value)
                target[name] = tensor.clone() if must_copy else tensor
        out.append(target)
    return out


class PaddedImages(list):
    """A padded batch's images (size_divisibility=): a list of per-image tensors, as
    torchvision's detection models take them, each a zero-copy view [C, h, w] (uint8
    [h, w, C] without Normalize) of `tensors`, the padded batch [N, C, Hb, Wb] (each image
    at the top left, zeros to its right and below; Hb and Wb the batch's largest height
    and width rounded up to a multiple of size_divisibility), with `image_sizes` each
    image's (h, w): the fields of torchvision's ImageList and Detectron2's."""

    def __init__(self, tensors, image_sizes):
        chw = tensors.dtype == torch.float32
        super().__init__(tensors[i, :, :h, :w] if chw else tensors[i, :h, :w, :]
                         for i, (h, w) in enumerate(image_sizes))
        self.tensors = tensors
        self.image_sizes = [tuple(size) for size in image_sizes]


def _rows(images):
    first = next(iter(images.values())) if isinstance(images, dict) else images
    return first.shape[0]


def _clone(images):
    if isinstance(images, dict):
        return {name: t.clone() for name, t in images.items()}
    return images.clone()


class _Epoch:
    """One epoch's progress on a loader's pipeline, shared by the iterators over it."""

    __slots__ = ("epoch", "delivered", "finished", "pending")

    def __init__(self, epoch, first_batch):
        self.epoch = epoch
        self.delivered = first_batch  # Batches of this epoch handed out (or skipped).
        self.finished = False         # Its end of epoch was read.
        # A _core.next result that a KeyboardInterrupt kept from being handed out: the
        # next __next__ hands it out first, so an interrupted loop loses nothing.
        self.pending = _NOTHING


class _EpochIterator:
    """The rest of one epoch of a DataLoader (iter(loader))."""

    def __init__(self, loader, core, run):
        self._loader = loader
        self._core = core
        self._run = run
        self._retired = False

    def __iter__(self):
        return self

    def __next__(self):
        self._loader._refuse_forked()
        _iterating_threads.add(threading.current_thread())  # Waited for at exit.
        with self._loader._iter_lock:  # One next() or iter() of a loader at a time.
            return self._next_locked()

    def _next_locked(self):
        if self._retired:
            raise RuntimeError("this iterator was replaced by a newer iter(loader)")
        run = self._run
        loader = self._loader
        while not run.finished:
            # Ctrl-C (KeyboardInterrupt) may land anywhere below: _core.next keeps a batch
            # that came with it, and a batch already taken goes back to run.pending.
            got = run.pending
            run.pending = _NOTHING
            try:
                if got is _NOTHING:
                    got = self._next_or_closed()
                if got is None:
                    loader._finish(run)
                    break
                batch = self._batch(got)
            except KeyboardInterrupt:
                if got is not _NOTHING and not run.finished:
                    run.pending = got
                raise
            run.delivered += 1
            if batch is not None:
                return batch
        raise StopIteration

    def _next_or_closed(self):
        """_core.next, where a close() of the loader while it waited (from another thread,
        or the interpreter's exit) is not a data error: a ValueError saying so, or at exit
        SystemExit, which ends a daemon thread's loop without a traceback (it was
        DataError: the pipeline was stopped, printed by every such thread at exit)."""
        loader = self._loader
        try:
            return self._core.next(loader._return_keys, loader._return_sources,
                                   loader._return_columns)
        except (DataError, ValueError):  # The core's own ValueError when it saw it.
            if not self._core.closed:
                raise
        if _exiting:
            raise SystemExit(0)
        raise ValueError("the DataLoader was closed while this call waited for it (close() "
                         "from another thread or a signal handler, or a signal handler's new "
                         "iter() of it, which starts a new pipeline)")

    def _batch(self, got):
        """The batch tuple of a _core.next result, or None for an epoch's last batch
        whose every sample was skipped. Makes new tensors each call (a retry after
        KeyboardInterrupt gets the same batch)."""
        loader = self._loader
        images_view, labels_view, keys, must_copy = got[:4]
        sources, columns, targets_views = got[6], got[7], got[9]
        image_sizes = got[10] if len(got) > 10 else None
        images = _images(images_view)
        del images_view
        if _rows(images) == 0:
            return None
        if must_copy:
            images = _clone(images)  # The zero-copy views die here: buffer returned.
        if image_sizes is not None:
            images = PaddedImages(images, image_sizes)
        if targets_views is not None and not isinstance(targets_views, list):
            # Semantic segmentation: (images, masks), masks int64 [N, H, W] as
            # torchvision's segmentation references feed CrossEntropyLoss: a view of the
            # batch, which the pipeline widened to int64 (BatchTargets::semantic), under
            # the images' hold (a copy when must_copy, as the images).
            masks = from_dlpack(targets_views)
            del targets_views
            if must_copy:
                masks = masks.clone()
            extras = ((keys,) if loader._return_keys else ()) + (
                (sources,) if loader._return_sources else ())
            return (images, masks) + extras
        if targets_views is not None:
            # Detection: (images, targets) as torchvision's detection models take them,
            # a list of image tensors and a list of target dicts (zero-copy views).
            targets = _targets(targets_views, must_copy)
            del targets_views
            extras = ((keys,) if loader._return_keys else ()) + (
                (sources,) if loader._return_sources else ())
            if not isinstance(images, PaddedImages):
                images = list(images.unbind(0))
            return (images, targets) + extras
        labels = from_dlpack(labels_view)
        # dataset= items' third elements, when they have one, as torch collates them.
        items = (got[8],) if got[8] is not None else ()
        # Optional elements only ever go at the end, in this order.
        extras = ((keys,) if loader._return_keys else ()) + (
            (sources,) if loader._return_sources else ()) + (
            (columns,) if loader._return_columns else ())
        return (images, labels) + items + extras

    def __len__(self):
        return max(0, self._core.batches_per_epoch - self._run.delivered)

    def _retire(self):
        self._retired = True
