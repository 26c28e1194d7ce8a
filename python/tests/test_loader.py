"""DataLoader: tensors, epochs, the C++ pipeline's bytes, stats, errors."""

import collections
import os
import re
import subprocess

import numpy as np
import pytest
import torch

from conftest import DUMP_BATCHES, FLOWLOADER_BIN, files_of

import flowloader


def test_the_extension_links_no_libpython():
    so = os.path.join(os.path.dirname(flowloader.__file__), "_flowloader.so")
    ldd = subprocess.run(["ldd", so], capture_output=True, text=True, check=True).stdout
    assert "libpython" not in ldd, ldd
    assert "not found" not in ldd, ldd


def test_float_chw_batches_are_float32_nchw_with_int64_labels(small_data):
    with flowloader.DataLoader(small_data, batch_size=8, image_size=32) as loader:
        images, labels = next(iter(loader))
    assert isinstance(images, torch.Tensor) and images.dtype == torch.float32
    assert tuple(images.shape) == (8, 3, 32, 32)
    assert labels.dtype == torch.int64 and tuple(labels.shape) == (8,)
    assert images.is_contiguous()


def test_uint8_hwc_batches_and_keys(small_data):
    with flowloader.DataLoader(small_data, batch_size=5, image_size=24, layout="uint8_hwc",
                               return_keys=True, shuffle=False) as loader:
        images, labels, keys = next(iter(loader))
    assert images.dtype == torch.uint8 and tuple(images.shape) == (5, 24, 24, 3)
    assert keys == files_of(small_data)[:5]
    assert labels.tolist() == [0] * 5  # The first class's files come first.


def test_len_is_batches_per_epoch_and_the_last_batch_is_partial(small_data):
    with flowloader.DataLoader(small_data, batch_size=10, image_size=16) as loader:
        sizes = [images.shape[0] for images, _ in loader]
        assert len(loader) == 4
    assert sizes == [10, 10, 10, 6]
    with flowloader.DataLoader(small_data, batch_size=10, image_size=16, drop_last=True) as loader:
        assert len(loader) == 3
        assert [images.shape[0] for images, _ in loader] == [10, 10, 10]


def test_each_iter_is_one_epoch_with_every_sample_exactly_once(small_data):
    files = files_of(small_data)
    orders = []
    with flowloader.DataLoader(small_data, batch_size=7, image_size=16, return_keys=True) as loader:
        for _ in range(3):
            keys = [k for _, _, batch_keys in loader for k in batch_keys]
            assert collections.Counter(keys) == collections.Counter(files)
            orders.append(keys)
    assert len({tuple(o) for o in orders}) == 3, "shuffle gives each epoch its own order"


def test_set_epoch_gives_that_epochs_order(small_data):
    def epoch_keys(loader):
        return [k for _, _, batch_keys in loader for k in batch_keys]
    with flowloader.DataLoader(small_data, batch_size=8, image_size=16, return_keys=True) as a:
        epochs = [epoch_keys(a) for _ in range(3)]
    with flowloader.DataLoader(small_data, batch_size=8, image_size=16, return_keys=True) as b:
        b.set_epoch(2)
        assert epoch_keys(b) == epochs[2]
        b.set_epoch(0)
        assert epoch_keys(b) == epochs[0]


def read_npy_uint8(path):
    return np.load(path)


@pytest.mark.parametrize("transform", ["train", "eval"])
def test_tensors_equal_the_cpp_pipelines_bytes(small_data, tmp_path, transform):
    prefix = str(tmp_path / "dump")
    subprocess.run([DUMP_BATCHES, f"--data={small_data}", f"--out={prefix}",
                    f"--transform={transform}", "--image_size=40", "--batch_size=8",
                    "--num_workers=2"], check=True, capture_output=True)
    expected = np.load(prefix + ".npy")
    expected_keys = open(prefix + ".keys.txt").read().split("\n")[:-1]
    with flowloader.DataLoader(small_data, batch_size=8, num_workers=1, shuffle=False, seed=0,
                               transform=transform, image_size=40, layout="uint8_hwc",
                               device="cpu", return_keys=True) as loader:
        batches = [(images.numpy().copy(), keys) for images, _, keys in loader]
    got = np.concatenate([b for b, _ in batches])
    assert [k for _, ks in batches for k in ks] == expected_keys
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)


def test_stats_is_the_summary_json(small_data):
    with flowloader.DataLoader(small_data, batch_size=6, image_size=16) as loader:
        for _ in loader:
            pass
        stats = loader.stats()
    assert stats["samples"] == 36 and stats["batches"] == 6
    assert stats["epochs"] == 1
    assert stats["checkpoint"] == {"epoch": 1, "batch": 0}
    assert stats["num_workers"] == 2 and stats["batch_size"] == 6
    assert "decode" in stats["stages"]
    assert stats["first_batch_seconds"] >= 0 and len(stats["epoch_end_seconds"]) == 1


def test_stats_counts_each_epochs_skips_not_the_next_ones_read_ahead(tmp_path):
    """Three files of 20 are not images. Skips count when their batch is delivered: after
    each epoch stats() shows exactly 3 more, though the workers have by then finished the
    next epoch's first batches (which hold the bad files) ahead of the consumer."""
    import time
    from conftest import make_dataset
    root = make_dataset(tmp_path / "data", classes=1, images_per_class=17)
    cls = os.path.join(root, os.listdir(root)[0])
    for i in range(3):  # Sorted first: the first batch of every epoch holds them.
        with open(os.path.join(cls, f"0bad{i}.jpg"), "wb") as f:
            f.write(b"not a JPEG" * (i + 1))
    with flowloader.DataLoader(root, batch_size=4, num_workers=2, prefetch_batches=4,
                               shuffle=False, image_size=16) as loader:
        for epoch in range(3):
            rows = sum(images.shape[0] for images, _ in loader)
            assert rows == 17
            time.sleep(0.5)  # The next epoch's read-ahead runs meanwhile.
            stats = loader.stats()
            assert stats["skipped"] == 3 * (epoch + 1), (epoch, stats["skipped"])
            assert sum(stats["errors"].values()) == 3 * (epoch + 1), stats["errors"]


def test_close_and_the_context_manager_end_the_loader(small_data):
    with flowloader.DataLoader(small_data, batch_size=6, image_size=16) as loader:
        next(iter(loader))
    with pytest.raises(ValueError, match="the DataLoader is closed"):
        iter(loader)
    loader.close()  # Twice is fine.


def cli_error(*flags):
    """The one-line message `flowloader run` prints for `flags`, without its prefix."""
    run = subprocess.run([FLOWLOADER_BIN, "run", "--metrics_address=", *flags],
                         capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    lines = [l for l in run.stderr.splitlines() if not re.match(r"flowloader: [IW] ", l)]
    assert len(lines) == 1, run.stderr
    return lines[0].removeprefix("flowloader: ")


@pytest.mark.parametrize("kwargs,flag", [
    ({"batch_size": 0}, "--batch_size=0"),
    ({"num_workers": -1}, "--num_workers=-1"),
    ({"transform": "sideways"}, "--transform=sideways"),
    ({"layout": "nhwc"}, "--layout=nhwc"),
    ({"on_error": "maybe"}, "--on_error=maybe"),
    ({"device": "tpu"}, "--device=tpu"),
    ({"even_shards": "drop"}, "--even_shards=drop"),
    ({"max_errors": "lots"}, "--max_errors=lots"),
    ({"image_size": 0}, "--image_size=0"),
])
def test_bad_values_raise_value_error_with_the_clis_message(small_data, kwargs, flag):
    message = cli_error(f"--data={small_data}", flag)
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(small_data, **kwargs)
    assert str(raised.value) == message


def test_a_missing_data_path_raises_the_clis_message(tmp_path):
    missing = str(tmp_path / "nowhere")
    message = cli_error(f"--data={missing}")
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(missing)
    assert str(raised.value) == message


@pytest.mark.parametrize("kwargs,pattern", [
    ({"shuffle": "yes"}, "shuffle must be True or False, got str 'yes'"),
    ({"batch_size": 1.5}, "batch_size must be an int, got float 1.5"),
    ({"batch_size": True}, "batch_size must be an int, got bool True"),
    ({"transform": 3}, "transform must be 'train', 'eval', a flowloader.transforms.Compose, "
                       "or a list or dict of them, got int 3"),
    ({"batchsize": 3}, "unexpected keyword argument 'batchsize' \\(did you mean 'batch_size'\\?\\)"),
    ({"rank": "0"}, "rank must be an int, got str '0'"),
    ({"return_keys": 1}, "return_keys must be True or False"),
])
def test_wrong_types_raise_type_error(small_data, kwargs, pattern):
    with pytest.raises(TypeError, match=pattern):
        flowloader.DataLoader(small_data, **kwargs)


def test_every_spec_key_is_a_keyword(small_data, flowloader_module, tmp_path):
    from flowloader import _flowloader
    keys = [k["name"] for k in _flowloader.spec_keys() if k["is_scalar"] and k["name"] != "data"]
    loader = flowloader.DataLoader(small_data, name="kw", in_order=True, pin_memory=False,
                                   memory_limit_mb=0, max_errors=5, epochs=1, even_shards="trim", batch_size=12,
                                   image_size=16)
    assert loader._core.options["name"] == "kw"
    assert len(list(loader)) == 3 and len(list(loader)) == 0  # epochs=1 caps the loop.
    loader.close()
    for key in keys:  # Each is accepted (not a TypeError for an unknown keyword).
        try:
            flowloader.DataLoader(small_data, **{key: _probe_value(key, tmp_path)}).close()
        except ValueError:
            pass


def _probe_value(key, tmp_path):
    from flowloader import _SPEC_KEYS, _is_int_key
    spec_key = _SPEC_KEYS[key]
    if key == "cache_dir":  # A directory the loader creates: in the test's own tmp_path.
        return str(tmp_path / "cache")
    if spec_key["is_bool"]:
        return spec_key["default"] == "true"
    if _is_int_key(key):
        return int(spec_key["default"])
    return spec_key["default"] or "1"


def test_a_spec_file_sets_options_and_keywords_override_it(small_data, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(f"data: {small_data}\nbatch_size: 5\nimage_size: 20\nshuffle: false\n")
    with flowloader.DataLoader(spec=str(spec)) as loader:
        images, _ = next(iter(loader))
        assert tuple(images.shape) == (5, 3, 20, 20)
    with flowloader.DataLoader(spec=str(spec), batch_size=64) as loader:
        images, _ = next(iter(loader))
        assert tuple(images.shape) == (36, 3, 20, 20)
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: x\nbatchsize: 5\n")
    with pytest.raises(ValueError, match=r"bad.yaml:2:1: unknown key 'batchsize' in pipeline "
                                         r"\(did you mean 'batch_size'\?\)"):
        flowloader.DataLoader(spec=str(bad))


def test_a_fatal_data_error_names_the_file(tmp_path):
    root = tmp_path / "data" / "cls"
    root.mkdir(parents=True)
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    with flowloader.DataLoader(str(tmp_path / "data"), on_error="fail", image_size=16) as loader:
        with pytest.raises(flowloader.DataError, match="cls/broken.jpg"):
            next(iter(loader))
    assert issubclass(flowloader.DataError, RuntimeError)


def test_host_batches_are_dlpack_cpu_tensors(small_data):
    from flowloader import _flowloader
    core = _flowloader._Loader(None, [("data", small_data), ("image_size", "16"),
                                      ("device", "cpu")], "", [0, 0, -1, 0])
    images, labels, _, _, epoch, index = core.next(False)[:6]  # Then sources, columns.
    assert images.__dlpack_device__() == (1, 0)  # kDLCPU
    assert labels.__dlpack_device__() == (1, 0)
    assert (epoch, index) == (0, 0)
    core.close()


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="no CUDA device here: device batches (kDLCUDA) not exercised")
def test_device_batches_are_cuda_tensors_equal_to_the_host_copy(small_data):
    with flowloader.DataLoader(small_data, batch_size=4, image_size=16, device="cuda",
                               shuffle=False) as gpu, \
         flowloader.DataLoader(small_data, batch_size=4, image_size=16, device="cpu",
                               shuffle=False) as cpu:
        for (g, gl), (c, cl) in zip(gpu, cpu):
            assert g.is_cuda and g.device.index == 0
            # Queued on torch's current stream, after the upload the batch waited for.
            assert torch.equal(g.cpu(), c) and torch.equal(gl, cl)


def test_threads_iterating_one_loader_take_turns(small_data):
    # Two threads iterating one loader: each iter() replaces the other's iterator (its
    # next() raises RuntimeError), and nothing else may happen. A hostile round saw a new
    # iter() replace the pipeline under the other thread's next(): "the DataLoader is
    # closed" and a sample delivered twice in an epoch (2 runs in 120 of this loop before
    # the fix, 0 in 120 after); iter() and next() now hold the loader's lock.
    import threading
    import time
    for rep in range(40):
        loader = flowloader.DataLoader(small_data, batch_size=1, num_workers=2, image_size=16,
                                       epochs=1, return_keys=True, seed=rep,
                                       prefetch_batches=2)
        keys, errors, lock = [], [], threading.Lock()

        def work():
            try:
                for _, _, batch_keys in loader:
                    with lock:
                        keys.extend(batch_keys)
                    time.sleep(0.002)
            except RuntimeError as e:
                if "replaced by a newer iter(loader)" not in str(e):
                    errors.append(repr(e))
            except Exception as e:  # noqa: BLE001 -- any other error fails the test.
                errors.append(repr(e))
        threads = [threading.Thread(target=work) for _ in range(2 + rep % 2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads)
        assert errors == [] and len(keys) == len(set(keys)) <= 36, (rep, errors, len(keys))
        assert loader.state_dict()["epoch"] in (0, 1)  # Still open.
        loader.close()
