"""state_dict / load_state_dict: resuming mid-epoch equals the uninterrupted run."""

import pytest
import torch

import flowloader


def run(loader, epochs):
    out = []
    for _ in range(epochs):
        for images, labels, keys in loader:
            out.append((images.clone(), labels.clone(), keys))
    return out


@pytest.mark.parametrize("stop_after", [0, 3, 5, 9])
def test_resume_mid_epoch_equals_the_uninterrupted_run(small_data, stop_after):
    options = dict(batch_size=4, image_size=24, seed=7, return_keys=True)
    with flowloader.DataLoader(small_data, **options) as whole:
        expected = run(whole, 2)  # 9 batches per epoch, 18 in all.
    with flowloader.DataLoader(small_data, **options) as first:
        got = run(first, 1)
        it = iter(first)
        for _ in range(stop_after):
            images, labels, keys = next(it)
            got.append((images.clone(), labels.clone(), keys))
        state = first.state_dict()
    assert (state["epoch"], state["batch"]) == ((1, stop_after) if stop_after < 9 else (2, 0))
    with flowloader.DataLoader(small_data, **options) as second:
        second.load_state_dict(state)
        got += run(second, 1 if stop_after < 9 else 0)
    assert len(got) == len(expected)
    for (gi, gl, gk), (ei, el, ek) in zip(got, expected):
        assert gk == ek and torch.equal(gl, el) and torch.equal(gi, ei)


def test_state_dict_between_epochs_names_the_next_epoch(small_data):
    with flowloader.DataLoader(small_data, batch_size=12, image_size=16) as loader:
        assert loader.state_dict()["epoch"] == 0
        list(loader)
        assert (loader.state_dict()["epoch"], loader.state_dict()["batch"]) == (1, 0)


def test_load_state_dict_refuses_other_options(small_data):
    with flowloader.DataLoader(small_data, batch_size=12, image_size=16) as a:
        state = a.state_dict()
    with flowloader.DataLoader(small_data, batch_size=6, image_size=16) as b:
        with pytest.raises(ValueError, match="saved with batch_size=12 but this loader has "
                                             "batch_size=6"):
            b.load_state_dict(state)
