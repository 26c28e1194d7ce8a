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


def test_set_batch_size_mid_epoch_keeps_every_sample_once_and_resumes(small_data):
    options = dict(batch_size=2, image_size=16, seed=1, return_keys=True)
    with flowloader.DataLoader(small_data, **options) as whole:
        expected = [k for _, _, keys in whole for k in keys]
    with flowloader.DataLoader(small_data, **options) as loader:
        it = iter(loader)
        keys = list(next(it)[2])
        loader.set_batch_size(1)
        sizes = []
        for _ in range(8):  # Past the batches planned before the change (<= prefetch + 1).
            batch = next(it)
            keys += batch[2]
            sizes.append(len(batch[2]))
        state = loader.state_dict()
    assert sizes[-1] == 1, sizes  # The batches planned after the change have 1 row.
    with flowloader.DataLoader(small_data, **options) as resumed:
        resumed.load_state_dict(state)
        keys += [k for _, _, ks in resumed for k in ks]
    assert keys == expected
    with flowloader.DataLoader(small_data, **options) as loader:
        with pytest.raises(ValueError, match="3"):
            loader.set_batch_size(3)  # Above the buffers' 2 rows.


def batches_of(loader):
    return [(images.clone(), labels.clone(), keys) for images, labels, keys in loader]


def assert_same_batches(got, expected):
    assert len(got) == len(expected)
    for (gi, gl, gk), (ei, el, ek) in zip(got, expected):
        assert gk == ek and torch.equal(gl, el) and torch.equal(gi, ei)


@pytest.mark.parametrize("stop_after", [1, 4, 8])
def test_state_dict_after_break_resumes_the_rest_of_the_epoch(small_data, stop_after):
    options = dict(batch_size=4, image_size=24, seed=3, return_keys=True)
    with flowloader.DataLoader(small_data, **options) as whole:
        expected = batches_of(whole)  # 9 batches.
    got = []
    with flowloader.DataLoader(small_data, **options) as first:
        for i, (images, labels, keys) in enumerate(first):
            got.append((images.clone(), labels.clone(), keys))
            if i == stop_after - 1:
                break
        # The loop's iterator is gone: the state is still the batch after the last one.
        state = first.state_dict()
    assert (state["epoch"], state["batch"]) == (0, stop_after)
    with flowloader.DataLoader(small_data, **options) as second:
        second.load_state_dict(state)
        got += batches_of(second)
    assert_same_batches(got, expected)


def test_a_new_iter_after_break_continues_the_epoch_then_goes_on(small_data):
    options = dict(batch_size=4, image_size=24, seed=5, return_keys=True)
    with flowloader.DataLoader(small_data, **options) as whole:
        expected = batches_of(whole) + batches_of(whole)  # Epochs 0 and 1.
    with flowloader.DataLoader(small_data, **options) as loader:
        got = []
        for batch in loader:
            got.append((batch[0].clone(), batch[1].clone(), batch[2]))
            break
        assert loader.state_dict()["batch"] == 1
        got += batches_of(loader)  # The rest of epoch 0, where state_dict pointed.
        assert (loader.state_dict()["epoch"], loader.state_dict()["batch"]) == (1, 0)
        got += batches_of(loader)  # Epoch 1.
    assert_same_batches(got, expected)


def test_a_new_iter_after_every_batch_was_taken_starts_the_next_epoch(small_data):
    with flowloader.DataLoader(small_data, batch_size=12, image_size=16,
                               return_keys=True) as loader:
        it = iter(loader)
        first = [next(it)[2] for _ in range(3)]  # All 3 batches; the end not read.
        assert loader.state_dict()["epoch"] == 1
        second = [keys for _, _, keys in loader]
    assert len(second) == 3 and second != first


def test_set_epoch_after_break_starts_that_epoch_from_its_beginning(small_data):
    options = dict(batch_size=4, image_size=16, seed=2, return_keys=True)
    with flowloader.DataLoader(small_data, **options) as loader:
        epoch0 = [keys for _, _, keys in loader]
        loader.set_epoch(0)
        for _ in loader:
            break
        loader.set_epoch(0)
        assert (loader.state_dict()["epoch"], loader.state_dict()["batch"]) == (0, 0)
        assert [keys for _, _, keys in loader] == epoch0


def test_loops_past_the_last_epoch_are_empty_and_the_loader_stays_open(small_data):
    # With epochs=1, the loop after the epoch was empty, the next raised "cannot resume at
    # epoch 2" (the pipeline's own refusal of a resume) and left the loader closed, so
    # state_dict() and every later call raised "the DataLoader is closed".
    loader = flowloader.DataLoader(small_data, batch_size=8, image_size=16, epochs=1,
                                   return_keys=True)
    first = [k for _, _, keys in loader for k in keys]
    assert sorted(first) == sorted(set(first)) and len(first) == 36
    for _ in range(3):
        assert list(loader) == []
    assert loader.state_dict()["epoch"] == 1
    with pytest.raises(ValueError) as raised:
        loader.set_epoch(5)
        iter(loader)
    assert "past this loader's epochs=1" in str(raised.value)
    assert "\n" not in str(raised.value)
    loader.set_epoch(0)  # Still open: the epoch again, the same samples.
    assert sorted(k for _, _, keys in loader for k in keys) == sorted(first)
    loader.close()
