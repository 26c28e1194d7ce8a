"""transforms.Lambda(fn): a Python function in a view's op list (the python_lambda op):
reproducible for any num_workers, in place or replacing, a raise counted as a skip."""

import gc
import threading
import time

import numpy as np
import pytest
import torch

import flowloader
import flowloader.transforms as T


def _epoch(data, compose, **kwargs):
    kwargs.setdefault("batch_size", 8)
    kwargs.setdefault("seed", 5)
    kwargs.setdefault("epochs", 1)  # No prefetch of a next epoch: stats() is this one's.
    with flowloader.DataLoader(data, transform=compose, **kwargs) as loader:
        batches = [images.clone() for images, _ in loader]
        stats = loader.stats()
    return batches, stats


def noise(image, rng):
    """Adds the Generator's noise in place: the output depends on its seed."""
    image += rng.integers(0, 16, size=image.shape, dtype=np.uint8)


def test_lambda_with_a_generator_is_the_same_for_1_and_2_workers(small_data):
    compose = T.Compose([T.RandomResizedCrop(16), T.Lambda(noise)])
    one, _ = _epoch(small_data, compose, num_workers=1)
    two, _ = _epoch(small_data, compose, num_workers=2)
    assert len(one) == len(two) == 5
    assert all(torch.equal(a, b) for a, b in zip(one, two))
    # The noise is there, and is the sample's own: another seed draws other noise.
    plain, _ = _epoch(small_data, T.Compose([T.RandomResizedCrop(16)]), num_workers=2)
    assert not torch.equal(one[0], plain[0])
    other, _ = _epoch(small_data, compose, num_workers=2, seed=6)
    assert not torch.equal(one[0], other[0])


def test_lambda_sees_the_pixels_and_runs_off_the_main_thread(small_data):
    seen = []

    def invert(image):  # One argument: no Generator; returns a new array.
        seen.append((image.shape, image.dtype, threading.current_thread() is
                     threading.main_thread()))
        return 255 - image
    inverted, _ = _epoch(small_data, T.Compose([T.CenterCrop(16), T.Lambda(invert)]))
    plain, _ = _epoch(small_data, T.Compose([T.CenterCrop(16)]))
    assert all(torch.equal(a, 255 - b) for a, b in zip(inverted, plain))
    assert seen and all(s == ((16, 16, 3), np.uint8, False) for s in seen)


def test_lambda_may_change_the_size_before_a_fixed_size_op(small_data):
    def tile(image):
        return np.concatenate([image, image], axis=1)  # 16 x 32.
    compose = T.Compose([T.CenterCrop(16), T.Lambda(tile), T.CenterCrop([16, 32]),
                         T.ToTensor()])
    batches, _ = _epoch(small_data, compose)
    assert batches[0].shape == (8, 3, 16, 32)
    assert torch.equal(batches[0][..., :16], batches[0][..., 16:])


def test_a_raising_lambda_is_a_counted_skip(small_data):
    def flaky(image, rng):
        if image[0, 0, 0] % 2:
            raise ValueError("odd corner")
    batches, stats = _epoch(small_data, T.Compose([T.CenterCrop(16), T.Lambda(flaky)]))
    assert stats["skipped"] > 0
    assert stats["errors"] == {"python_error": stats["skipped"]}
    assert sum(b.shape[0] for b in batches) == 36 - stats["skipped"]


def test_a_wrong_result_is_a_counted_skip(small_data):
    _, stats = _epoch(small_data, T.Compose([T.CenterCrop(16),
                                             T.Lambda(lambda x: x.astype(np.float32))]))
    assert stats["skipped"] == 36 and stats["errors"] == {"python_error": 36}


def test_a_raising_lambda_fails_with_on_error_fail(small_data):
    def boom(image):
        raise RuntimeError("no")
    with pytest.raises(flowloader.DataError, match="Lambda raised RuntimeError: no"):
        _epoch(small_data, T.Compose([T.CenterCrop(16), T.Lambda(boom)]), on_error="fail")


def test_lambda_needs_a_callable():
    with pytest.raises(TypeError, match="callable"):
        T.Lambda(3)


def test_the_loader_keeps_its_lambdas_for_a_new_pipeline(small_data):
    loader = flowloader.DataLoader(small_data, batch_size=8, transform=T.Compose(
        [T.CenterCrop(8), T.Lambda(lambda image: 255 - image)]))
    gc.collect()  # The Compose above has no other owner.
    with loader:
        loader.set_epoch(1)  # Makes the pipeline anew, finding the Lambda by its id.
        images, _ = next(iter(loader))
    assert images.shape == (8, 8, 8, 3)


def test_lambda_cost_is_its_own_op_row(small_data):
    def slow(image):
        time.sleep(0.002)
    _, stats = _epoch(small_data, T.Compose([T.CenterCrop(16), T.Lambda(slow)]))
    rows = {row["op"]: row for row in stats["stages"]["transforms"]["ops"]}
    assert list(rows) == ["center_crop", "python_lambda"]
    assert rows["python_lambda"]["applied"] == 36
    assert rows["python_lambda"]["busy_seconds"] >= 36 * 0.002
    assert rows["python_lambda"]["share"] > rows["center_crop"]["share"]


@pytest.mark.parametrize("seed", [0, 1, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**63,
                                  2**64 - 1, 0x9E3779B97F4A7C15, 123456789012345])
def test_the_generator_is_default_rng_of_the_seed(seed):
    # A worker reseeds its one Generator per call; its state must be default_rng(seed)'s
    # (the same draws as making the Generator anew).
    from flowloader import _flowloader
    assert _flowloader._lambda_generator_state(seed) == \
        np.random.default_rng(seed).bit_generator.state


def test_a_kept_generator_or_image_changes_nothing(small_data):
    kept_images, kept_rngs = [], []

    def keeps(image, rng):  # Keeps what it was given past the call.
        noise(image, rng)
        kept_images.append(image)
        kept_rngs.append(rng)

    compose = T.Compose([T.CenterCrop(16), T.Lambda(noise)])
    plain, _ = _epoch(small_data, compose, num_workers=2)
    keeping, _ = _epoch(small_data, T.Compose([T.CenterCrop(16), T.Lambda(keeps)]),
                        num_workers=2)
    assert all(torch.equal(a, b) for a, b in zip(plain, keeping))
    # A kept array holds its sample's pixels as the call left them (its own memory now).
    rows = {bytes(row.numpy()) for batch in plain for row in batch}
    assert len(kept_images) == 36 and all(bytes(image) in rows for image in kept_images)
    assert len({id(rng) for rng in kept_rngs}) == 36  # A new Generator after each kept one.


def test_a_returned_view_of_the_image_is_taken(small_data):
    plain, _ = _epoch(small_data, T.Compose([T.CenterCrop(16)]))
    flipped, _ = _epoch(small_data, T.Compose([T.CenterCrop(16),
                                               T.Lambda(lambda image: image[:, ::-1])]))
    assert all(torch.equal(a.flip(2), b) for a, b in zip(plain, flipped))
    same, _ = _epoch(small_data, T.Compose([T.CenterCrop(16), T.Lambda(lambda image: image)]))
    assert all(torch.equal(a, b) for a, b in zip(plain, same))
    rows, _ = _epoch(small_data, T.Compose([T.CenterCrop(16),
                                            T.Lambda(lambda image: image[4:12]),
                                            T.CenterCrop([8, 16])]))
    assert all(torch.equal(a[:, 4:12], b) for a, b in zip(plain, rows))
