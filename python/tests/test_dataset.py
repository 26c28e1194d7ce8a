"""DataLoader(dataset=obj): your own map-style dataset read by flowloader's graph."""

import collections
import io
import os
import threading

import numpy as np
import pytest
import torch
from PIL import Image

from conftest import files_of, run_python

import flowloader


class Items:
    """A map-style dataset over a list of items (what __getitem__ returns)."""

    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def image_folder_items(root, extras=False):
    """(bytes, label[, index]) of every file, in ImageFolder's order and labels."""
    classes = sorted(c for c in os.listdir(root) if os.path.isdir(os.path.join(root, c)))
    items = []
    for i, key in enumerate(files_of(root)):
        with open(os.path.join(root, key), "rb") as f:
            item = (f.read(), classes.index(key.split("/")[0]))
        items.append(item + ((i,) if extras else ()))
    return items


def test_bytes_give_the_image_folders_batches(small_data):
    options = dict(batch_size=5, image_size=24, seed=4, return_keys=True)
    files = files_of(small_data)
    with flowloader.DataLoader(small_data, **options) as native, \
         flowloader.DataLoader(dataset=Items(image_folder_items(small_data)), **options) as mine:
        for _ in range(2):
            pairs = list(zip(native, mine))
            assert len(pairs) == 8
            for (ni, nl, nk), (mi, ml, mk) in pairs:
                assert mk == [str(files.index(k)) for k in nk]
                assert torch.equal(ml, nl) and torch.equal(mi, ni)


def test_every_index_exactly_once_per_epoch_over_3_epochs(small_data):
    items = image_folder_items(small_data, extras=True)
    orders = []
    with flowloader.DataLoader(dataset=Items(items), batch_size=7, image_size=16) as loader:
        for _ in range(3):
            order = []
            for images, labels, extras in loader:
                assert labels.tolist() == [items[i][1] for i in extras]
                assert images.shape[0] == len(extras)
                order += extras
            assert collections.Counter(order) == collections.Counter(range(len(items)))
            orders.append(order)
    assert len({tuple(o) for o in orders}) == 3, "shuffle gives each epoch its own order"


def test_without_extras_a_batch_is_images_and_labels(small_data):
    with flowloader.DataLoader(dataset=Items(image_folder_items(small_data)), batch_size=36,
                               image_size=16) as loader:
        batch = next(iter(loader))
    assert len(batch) == 2 and sorted(batch[1].tolist()) == [0] * 12 + [1] * 12 + [2] * 12


def test_ranks_take_the_native_ranks_samples(odd_data):
    items = image_folder_items(odd_data)  # 37: rank 1's shard is padded.
    files = files_of(odd_data)
    seen = []
    for rank in range(2):
        options = dict(batch_size=4, image_size=16, rank=rank, world_size=2, return_keys=True)
        with flowloader.DataLoader(odd_data, **options) as native, \
             flowloader.DataLoader(dataset=Items(items), **options) as mine:
            native_keys = [files.index(k) for _, _, keys in native for k in keys]
            mine_keys = [int(k) for _, _, keys in mine for k in keys]
        assert mine_keys == native_keys and len(mine_keys) == 19
        seen += mine_keys
    assert set(seen) == set(range(37))


@pytest.mark.parametrize("stop_after", [1, 5])
def test_state_dict_after_break_resumes_the_rest_of_the_epoch(small_data, stop_after):
    items = image_folder_items(small_data, extras=True)
    options = dict(batch_size=4, image_size=24, seed=9)

    def take(loader, limit=None):
        out = []
        for images, labels, extras in loader:
            out.append((images.clone(), labels.clone(), extras))
            if len(out) == limit:
                break
        return out
    with flowloader.DataLoader(dataset=Items(items), **options) as whole:
        expected = take(whole)
    with flowloader.DataLoader(dataset=Items(items), **options) as first:
        got = take(first, stop_after)
        state = first.state_dict()
    assert (state["epoch"], state["batch"]) == (0, stop_after)
    with flowloader.DataLoader(dataset=Items(items), **options) as second:
        second.load_state_dict(state)
        got += take(second)
    assert len(got) == len(expected) == 9
    for (gi, gl, ge), (ei, el, ee) in zip(got, expected):
        assert ge == ee and torch.equal(gl, el) and torch.equal(gi, ei)


def random_images():
    """RGB and grey PIL images of several sizes (random pixels: any error shows)."""
    rng = np.random.default_rng(0)
    out = []
    for k, (h, w) in enumerate([(40, 52), (61, 33), (48, 48), (35, 70)]):
        pixels = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        image = Image.fromarray(pixels, "RGB")
        out.append(image.convert("L") if k == 3 else image)
    return out


def png(image):
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def batches(items, **options):
    with flowloader.DataLoader(dataset=Items(items), batch_size=4, seed=1, **options) as loader:
        return [(images.clone(), labels.clone()) for images, labels in loader]


@pytest.mark.parametrize("layout", ["float_chw", "uint8_hwc"])
def test_arrays_and_pil_images_give_the_batches_of_their_png_bytes(layout):
    images = random_images()
    options = dict(image_size=20, layout=layout)
    expected = batches([(png(im), i) for i, im in enumerate(images)], **options)
    arrays = [(np.asarray(im), i) for i, im in enumerate(images)]
    grey_hw1 = [(a[..., None] if a.ndim == 2 else a, i) for a, i in arrays]
    pil = [(im, i) for i, im in enumerate(images)]
    bytearrays = [(bytearray(png(im)), i) for i, im in enumerate(images)]
    for items in (arrays, grey_hw1, pil, bytearrays):
        got = batches(items, **options)
        assert len(got) == 1
        assert torch.equal(got[0][1], expected[0][1])
        assert torch.equal(got[0][0], expected[0][0])


def test_strided_arrays_and_other_pil_modes_are_taken_as_their_pixels():
    images = [im for im in random_images() if im.mode == "RGB"]
    flipped = [(np.asarray(im)[:, ::-1], i) for i, im in enumerate(images)]  # Not contiguous.
    expected = batches([(png(im.transpose(Image.Transpose.FLIP_LEFT_RIGHT)), i)
                        for i, im in enumerate(images)], image_size=20)
    assert all(torch.equal(a, b) for a, b in zip(batches(flipped, image_size=20)[0],
                                                  expected[0]))
    # RGBA (and any mode but RGB and L) is converted to RGB, as ImageFolder's loader does.
    rgba = [(im.convert("RGBA"), i) for i, im in enumerate(images)]
    plain = batches([(png(im), i) for i, im in enumerate(images)], image_size=20)
    assert all(torch.equal(a, b) for a, b in zip(batches(rgba, image_size=20)[0], plain[0]))


class Raising(Items):
    def __getitem__(self, i):
        if i == 5:
            raise ValueError("bad row 5\nsecond line of the message")
        return super().__getitem__(i)


def test_a_raising_getitem_is_a_counted_skip_logged_in_one_line(small_data, capfd):
    items = image_folder_items(small_data, extras=True)
    with flowloader.DataLoader(dataset=Raising(items), batch_size=8, image_size=16,
                               epochs=1) as loader:
        delivered = [i for _, _, extras in loader for i in extras]
        stats = loader.stats()
    assert sorted(delivered) == [i for i in range(36) if i != 5]
    assert stats["skipped"] == 1 and stats["errors"] == {"python_error": 1}
    log = capfd.readouterr().err
    assert "skipped 5 (python_error): python_dataset failed on 5: dataset[5] raised " \
           "ValueError: bad row 5\n" in log
    assert "second line" not in log


def test_on_error_fail_raises_the_exception_line(small_data):
    items = image_folder_items(small_data)
    with flowloader.DataLoader(dataset=Raising(items), batch_size=36, image_size=16,
                               on_error="fail") as loader:
        with pytest.raises(flowloader.DataError, match="dataset.5. raised ValueError: bad row 5"):
            next(iter(loader))


def one_epoch_of(items, capfd):
    """One epoch over `items` in one batch: (rows delivered, stats(), stderr's log)."""
    with flowloader.DataLoader(dataset=Items(items), batch_size=7, image_size=16,
                               epochs=1) as loader:
        rows = sum(images.shape[0] for images, _ in loader)
        stats = loader.stats()
    return rows, stats, capfd.readouterr().err


def test_items_of_the_wrong_shape_are_python_errors(small_data, capfd):
    good = image_folder_items(small_data)[0]
    items = [good, "not a tuple", (good[0], "label"), (np.zeros((4, 4), np.float32), 1),
             (np.zeros((4, 4, 4), np.uint8), 1), (good[0],), good]
    rows, stats, log = one_epoch_of(items, capfd)
    assert rows == 2 and stats["errors"] == {"python_error": 5}
    for words in ["dataset[1] returned str, not (sample, label)",
                  "dataset[2]'s label is str, not an int",
                  "dataset[3]'s sample has items of format 'f'",
                  "dataset[4]'s sample is a uint8 array of shape (4, 4, 4)",
                  "dataset[5] returned tuple of length 1"]:
        assert words in log


class PilLike:
    """A PIL-like object of the user's (mode, size, convert, tobytes) returning anything."""

    mode = "RGB"

    def __init__(self, size, pixels):
        self.size, self.pixels = size, pixels

    def convert(self, mode):
        return self

    def tobytes(self):
        return self.pixels


class BadIndex:
    def __index__(self):
        raise RuntimeError("no index here")


def test_broken_pil_images_and_labels_are_python_errors_in_python_terms(small_data, capfd):
    # Before: "threw: Object of type 'str' is not an instance of 'bytes'" (a C++ exception
    # through the stage), "Unable to cast Python instance of type <class 'float'> to C++
    # type 'long'", a size of (2^40, 2^40) as "-9223372036854775808 bytes", and a label
    # whose __index__ raised as "label is BadIndex, not an int".
    good = image_folder_items(small_data)[0]
    items = [good, (PilLike((4, 4), "not bytes"), 1), (PilLike((4.5, 4), b""), 1),
             (PilLike((2**40, 2**40), b""), 1), (PilLike("ab", b""), 1),
             (good[0], BadIndex()), good]
    rows, stats, log = one_epoch_of(items, capfd)
    assert rows == 2 and stats["errors"] == {"python_error": 5}
    for words in ["dataset[1]'s PIL image's tobytes() returned str, not bytes",
                  "dataset[2]'s PIL image has size (4.5, 4): a (width, height) of two ints "
                  "in [1, 2^30]",
                  "dataset[3]'s PIL image has size (1099511627776, 1099511627776)",
                  "dataset[4]'s PIL image has size 'ab'",
                  "dataset[5]'s label: RuntimeError: no index here"]:
        assert words in log, log
    assert "C++" not in log and "threw" not in log


def test_getitem_runs_on_the_loaders_worker_threads(small_data):
    threads = set()

    class Recording(Items):
        def __getitem__(self, i):
            threads.add(threading.get_ident())
            return super().__getitem__(i)
    with flowloader.DataLoader(dataset=Recording(image_folder_items(small_data)),
                               batch_size=6, image_size=16, num_workers=2) as loader:
        assert sum(images.shape[0] for images, _ in loader) == 36
    assert threads and threading.get_ident() not in threads


def test_dataset_arguments_are_checked(small_data):
    with pytest.raises(TypeError, match="dataset must have __len__ and __getitem__"):
        flowloader.DataLoader(dataset=[1, 2, 3].__iter__())
    with pytest.raises(ValueError, match="dataset and data"):
        flowloader.DataLoader(small_data, dataset=Items([]))
    with pytest.raises(ValueError, match="at least one sample"):
        flowloader.DataLoader(dataset=Items([]))


LEFT_OPEN = """
import os
import flowloader

class Same:
    def __len__(self):
        return 4096
    def __getitem__(self, i):
        return DATA, i % 3

with open(os.environ["JPEG"], "rb") as f:
    DATA = f.read()
dropped = flowloader.DataLoader(dataset=Same(), batch_size=8, image_size=16, num_workers=2)
next(iter(dropped))
del dropped  # Mid-epoch, its workers busy calling __getitem__.
kept = flowloader.DataLoader(dataset=Same(), batch_size=8, image_size=16, num_workers=2)
next(iter(kept))
print("exiting", flush=True)
# The interpreter exits with `kept` open: atexit closes it before finalizing.
"""


def test_dropping_a_loader_and_exiting_with_one_open_end_cleanly(small_data):
    jpeg = os.path.join(small_data, files_of(small_data)[0])
    done = run_python(LEFT_OPEN, env={"JPEG": jpeg}, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "exiting\n"
