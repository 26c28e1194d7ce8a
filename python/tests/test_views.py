"""Several views per sample: a batch's images are a dict name -> tensor, one per view."""

import pytest
import torch

import flowloader

VIEWS_SPEC = """\
data: {data}
stages:
  - type: read
  - type: decode
  - type: augment
    outputs: [view0, view1]
    options: {{image_size: 32}}
  - type: augment
    name: small
    outputs: [small]
    options: {{image_size: 16, layout: uint8_hwc}}
"""


@pytest.fixture()
def views_spec(small_data, tmp_path):
    spec = tmp_path / "views.yaml"
    spec.write_text(VIEWS_SPEC.format(data=small_data))
    return str(spec)


def _epoch(spec, **kwargs):
    with flowloader.DataLoader(spec=spec, batch_size=8, seed=3, **kwargs) as loader:
        return [{k: v.clone() for k, v in images.items()} for images, _ in loader]


def test_images_are_a_dict_of_views_in_the_graphs_order(views_spec):
    with flowloader.DataLoader(spec=views_spec, batch_size=8) as loader:
        assert loader.outputs == [("view0", (3, 32, 32), "float32"),
                                  ("view1", (3, 32, 32), "float32"),
                                  ("small", (16, 16, 3), "uint8")]
        images, labels = next(iter(loader))
        assert list(images) == ["view0", "view1", "small"]
        assert tuple(images["view1"].shape) == (8, 3, 32, 32)
        assert images["small"].dtype == torch.uint8
        assert tuple(images["small"].shape) == (8, 16, 16, 3)
        assert not torch.equal(images["view0"], images["view1"])  # Independent crops.
        assert loader.held_batches == 1  # One batch, however many views it has.
        stats = loader.stats()
    assert stats["outputs"]["small"] == {"shape": [16, 16, 3], "dtype": "uint8"}


def test_each_view_is_the_same_for_one_or_two_workers(views_spec):
    one = _epoch(views_spec, num_workers=1)
    two = _epoch(views_spec, num_workers=2)
    assert len(one) == len(two)
    for a, b in zip(one, two):
        for name in a:
            assert torch.equal(a[name], b[name]), name


def test_a_single_view_graph_still_yields_a_tensor(small_data):
    with flowloader.DataLoader(small_data, batch_size=8, image_size=32) as loader:
        assert loader.outputs == [("output", (3, 32, 32), "float32")]
        images, _ = next(iter(loader))
    assert isinstance(images, torch.Tensor)
