"""batch_ops=: mixup_cutmix and label_smoothing hand soft targets to Python as a torch
float32 [N, num_classes] tensor; without them labels stay int64 [N]; a bad op is a
ValueError in one line; the same loader settings give the same bytes."""
import pytest
import torch

import flowloader

MIXUP = [{"type": "mixup_cutmix",
          "options": {"mixup_alpha": 0.8, "cutmix_alpha": 1.0, "label_smoothing": 0.1}}]


def first_batch(data, **kw):
    with flowloader.DataLoader(data, batch_size=8, image_size=16, **kw) as loader:
        return next(iter(loader))


def test_mixup_gives_float_soft_targets_that_sum_to_one(small_data):
    images, labels = first_batch(small_data, batch_ops=MIXUP)
    assert images.dtype == torch.float32 and tuple(images.shape) == (8, 3, 16, 16)
    assert labels.dtype == torch.float32 and tuple(labels.shape) == (8, 3)  # 3 classes.
    assert torch.allclose(labels.sum(dim=1), torch.ones(8), atol=1e-5)


def test_label_smoothing_alone_gives_smoothed_one_hots(small_data):
    _, plain = first_batch(small_data, shuffle=False)
    _, smooth = first_batch(small_data, shuffle=False,
                            batch_ops=[{"type": "label_smoothing", "options": {"smoothing": 0.3}}])
    assert plain.dtype == torch.int64
    want = torch.full((8, 3), 0.1)
    want[torch.arange(8), plain] = 0.8
    assert torch.allclose(smooth, want)


def test_the_same_settings_give_the_same_mixed_bytes(small_data):
    a_images, a_labels = first_batch(small_data, batch_ops=MIXUP, seed=3, num_workers=1)
    b_images, b_labels = first_batch(small_data, batch_ops=MIXUP, seed=3, num_workers=2)
    assert torch.equal(a_images, b_images) and torch.equal(a_labels, b_labels)


def test_a_per_sample_stage_in_batch_ops_is_a_value_error(small_data):
    with pytest.raises(ValueError, match="is a per-sample stage: list it under stages:"):
        flowloader.DataLoader(small_data, batch_ops=[{"type": "augment"}])
    with pytest.raises(TypeError, match="batch_ops must be a list"):
        flowloader.DataLoader(small_data, batch_ops="mixup_cutmix")


def test_batch_ops_with_a_python_dataset_are_refused():
    class Items:
        def __len__(self):
            return 4

        def __getitem__(self, i):
            return b"", 0

    with pytest.raises(ValueError, match="not with dataset="):
        flowloader.DataLoader(dataset=Items(), batch_ops=MIXUP)
