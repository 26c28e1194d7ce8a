"""README.md's Python quickstart runs as written, on a small dataset at a small size."""

import math
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def quickstart():
    """The ```python block of README.md's "Python quickstart" section."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    section = readme[readme.index("## Python quickstart"):]
    return re.search(r"^```python\n(.*?)^```$", section, re.M | re.S).group(1)


def test_readme_python_quickstart_trains(small_data):
    code = quickstart()
    assert '".sample_data"' in code and "image_size=224" in code, code
    # The sample data's path and a small image size; everything else as the README has it.
    code = code.replace('".sample_data"', repr(small_data)).replace("image_size=224",
                                                                   "image_size=32")
    scope = {}
    exec(compile(code, "README.md (Python quickstart)", "exec"), scope)
    assert math.isfinite(scope["loss"].item())
    assert scope["epoch"] == 1


def test_readme_transforms_snippet_delivers_a_batch(small_data):
    """The second block: a torchvision recipe moved over by changing its import."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    section = readme[readme.index("## Python quickstart"):readme.index("## CLI quickstart")]
    blocks = re.findall(r"^```python\n(.*?)^```$", section, re.M | re.S)
    assert len(blocks) == 2, blocks
    code = blocks[1].replace('".sample_data"', repr(small_data))
    import flowloader  # The quickstart block above it imports it.
    scope = {"flowloader": flowloader, "mean": [0.485, 0.456, 0.406],
             "std": [0.229, 0.224, 0.225]}
    exec(compile(code, "README.md (transforms snippet)", "exec"), scope)
    with scope["loader"] as loader:
        images, labels = next(iter(loader))
    assert tuple(images.shape[1:]) == (3, 176, 176)
    assert len(labels) == images.shape[0]
