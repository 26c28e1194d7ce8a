"""Hostile but valid calls of flowloader.transforms on float tensors (docs/python.md,
"Float tensors"), each against torchvision 0.14's tensor path: what torchvision computes
is computed, what it cannot is refused in one line naming the op and the knob, never an
internal function's name or a refusal of what torchvision accepts.
"""

import pytest
import torch
import torchvision.transforms as TV
import torchvision.transforms.functional as TF

import flowloader.transforms as T
import flowloader.transforms.functional as F


def test_a_resize_whose_long_side_passes_the_limit_names_resize_and_size():
    # Resize(200) of a 1 x 300 image makes its long side 60000: the size itself is valid,
    # the output is not; the refusal named the extension's _float_resize.
    x = torch.rand(3, 1, 300)
    for call in (lambda: T.Resize(200)(x), lambda: F.resize(x, 200),
                 lambda: T.Resize(200, antialias=True)(x[None])):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and len(message) <= 240, message
        assert "_float" not in message, message
        assert "resize" in message and "60000x200" in message and "16384" in message, message
        assert "size" in message.split(":")[-1], message  # The knob to change.
    # Within the limit it is torchvision's size.
    assert T.Resize(2)(x).shape == TF.resize(x, 2).shape == (3, 2, 600)
