"""Images of different sizes in one batch (size_divisibility=, issue 33): a Compose whose
output size depends on the image, bounded (torchvision's GeneralizedRCNNTransform resize:
shorter side 48, longer at most 80), yields flowloader.PaddedImages: a list of [3, h, w]
views of one zero-padded tensor [N, 3, Hb, Wb] (Hb, Wb rounded up to size_divisibility),
each image and its targets the same as one-sample batches give, and torchvision's
fasterrcnn_mobilenet_v3_large_320_fpn trains a step on it. A Compose without a bound is
refused in one line naming max_size."""

import os
import subprocess

import pytest
import torch

from conftest import FLOWLOADER_BIN


@pytest.fixture(scope="module")
def padded_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("padded") / "data"
    subprocess.run([FLOWLOADER_BIN, "make-dataset", "--task=detection", f"--out={root}",
                    "--images=12", "--min_short_side=64", "--max_short_side=120",
                    "--max_instances=4"], check=True, stdout=subprocess.DEVNULL)
    return str(root)


def loader(flowloader, data, batch_size=4, resize=None, **kwargs):
    from flowloader import transforms as T
    compose = T.Compose([resize or T.Resize(48, max_size=80), T.RandomHorizontalFlip(),
                         T.ToTensor(),
                         T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    return flowloader.DataLoader(os.path.join(data, "images"),
                                 annotations=os.path.join(data, "annotations",
                                                          "instances.json"),
                                 batch_size=batch_size, num_workers=2, shuffle=False,
                                 transform=compose, **kwargs)


def test_rows_are_views_of_one_padded_tensor(flowloader_module, padded_data):
    sizes = set()
    rows = 0
    for images, targets in loader(flowloader_module, padded_data, size_divisibility=32):
        assert isinstance(images, flowloader_module.PaddedImages) and isinstance(images, list)
        padded = images.tensors
        n, c, hb, wb = padded.shape
        assert n == len(images) == len(targets) == len(images.image_sizes) and c == 3
        assert hb % 32 == 0 and wb % 32 == 0
        assert hb - 32 < max(h for h, _ in images.image_sizes) <= hb
        assert wb - 32 < max(w for _, w in images.image_sizes) <= wb
        for i, (image, (h, w), target) in enumerate(zip(images, images.image_sizes, targets)):
            rows += 1
            sizes.add((h, w))
            assert max(h, w) <= 80 and min(h, w) <= 48
            assert image.shape == (3, h, w)
            # A view of the padded batch, not a copy.
            assert image.data_ptr() == padded[i].data_ptr()
            assert torch.equal(image, padded[i, :, :h, :w])
            assert float(padded[i, :, h:, :].abs().sum()) == 0
            assert float(padded[i, :, :, w:].abs().sum()) == 0
            k = target["boxes"].shape[0]
            assert target["masks"].shape == (k, h, w)
            b = target["boxes"]
            assert bool((b[:, 2] <= w).all()) and bool((b[:, 3] <= h).all())
    assert rows == 12
    assert len(sizes) >= 3  # Images of different sizes were batched together.


def test_rows_and_targets_are_the_one_sample_batches(flowloader_module, padded_data):
    padded = [(image.clone(), {k: (v.clone() if torch.is_tensor(v) else v)
                               for k, v in target.items()})
              for images, targets in loader(flowloader_module, padded_data,
                                            size_divisibility=32)
              for image, target in zip(images, targets)]
    single = [(images[0].clone(), {k: (v.clone() if torch.is_tensor(v) else v)
                                   for k, v in targets[0].items()})
              for images, targets in loader(flowloader_module, padded_data, batch_size=1,
                                            size_divisibility=0)]
    assert len(padded) == len(single) == 12
    for (image, target), (want_image, want_target) in zip(padded, single):
        assert torch.equal(image, want_image)
        assert set(target) == set(want_target)
        for key, value in target.items():
            if torch.is_tensor(value):
                assert torch.equal(value, want_target[key]), key
            else:
                assert value == want_target[key], key


def test_fasterrcnn_trains_a_step_on_a_padded_batch(flowloader_module, padded_data):
    import torchvision
    torch.manual_seed(0)
    model = torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None, num_classes=5, min_size=64, max_size=96)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images, targets = next(iter(loader(flowloader_module, padded_data, size_divisibility=32)))
    targets = [{"boxes": t["boxes"], "labels": t["labels"]} for t in targets]
    losses = model(images, targets)
    loss = sum(losses.values())
    assert torch.isfinite(loss)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    assert any(p.grad is not None and float(p.grad.abs().sum()) > 0
               for p in model.parameters())


def test_a_compose_without_a_bound_is_refused_naming_max_size(flowloader_module,
                                                              padded_data):
    from flowloader import transforms as T
    with pytest.raises(ValueError) as e:
        loader(flowloader_module, padded_data, resize=T.Resize(48), size_divisibility=32)
    message = str(e.value)
    assert "max_size" in message and "no upper bound" in message and "\n" not in message


def test_a_bounded_compose_without_size_divisibility_names_it(flowloader_module,
                                                              padded_data):
    with pytest.raises(ValueError) as e:
        loader(flowloader_module, padded_data)
    assert "size_divisibility" in str(e.value) and "\n" not in str(e.value)
