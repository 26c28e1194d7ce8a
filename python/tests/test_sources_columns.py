"""Weighted sources and per-sample columns from Python: sources=, return_sources=,
return_columns=, columns=, loader.source_names; real JPEGs, real GNU tar shards."""

import collections
import json
import os
import subprocess

import pytest
import torch

from conftest import FLOWLOADER_BIN, files_of

import flowloader

NOT_UTF8 = b"\xff\xfe caption"


def _caption(i):
    return f"caption {i} caf\u00e9"


@pytest.fixture(scope="session")
def column_shards(small_data, tmp_path_factory):
    """small_data's 36 JPEGs as 2 tar shards (GNU tar) with .cls, .txt and .json members;
    sample 5's .txt is not UTF-8. Returns (brace pattern, {member key: index})."""
    staging = tmp_path_factory.mktemp("column_staging")
    out = tmp_path_factory.mktemp("column_shards")
    files = files_of(small_data)
    classes = sorted({f.split("/")[0] for f in files})
    per_shard = 18
    for shard in range(2):
        names = []
        for i in range(shard * per_shard, (shard + 1) * per_shard):
            stem = f"{i:06d}"
            with open(os.path.join(small_data, files[i]), "rb") as f:
                (staging / f"{stem}.jpg").write_bytes(f.read())
            (staging / f"{stem}.cls").write_text(str(classes.index(files[i].split("/")[0])))
            (staging / f"{stem}.txt").write_bytes(
                NOT_UTF8 if i == 5 else _caption(i).encode())
            (staging / f"{stem}.json").write_text(json.dumps({"i": i}))
            names += [f"{stem}.{ext}" for ext in ("jpg", "cls", "txt", "json")]
        subprocess.run(["tar", "-cf", str(out / f"train-{shard:06d}.tar"), *names],
                       cwd=staging, check=True)
    return str(out / "train-{000000..000001}.tar")


def _index(key):
    return int(key.split("/")[-1].split(".")[0])


def test_return_columns_gives_str_and_bytes_where_not_utf8(column_shards):
    with flowloader.DataLoader(column_shards, batch_size=10, image_size=16, columns="txt,json",
                               return_keys=True, return_columns=True) as loader:
        seen = 0
        for images, labels, keys, columns in loader:
            assert isinstance(images, torch.Tensor) and len(labels) == len(keys)
            assert list(columns) == ["txt", "json"]
            assert all(len(values) == len(keys) for values in columns.values())
            for key, text, meta in zip(keys, columns["txt"], columns["json"]):
                i = _index(key)
                assert text == (NOT_UTF8 if i == 5 else _caption(i))
                assert json.loads(meta) == {"i": i}
                seen += 1
        assert seen == 36


def test_columns_are_off_by_default_and_return_columns_then_gives_an_empty_dict(column_shards):
    with flowloader.DataLoader(column_shards, batch_size=36, image_size=16,
                               return_columns=True) as loader:
        (images, labels, columns), = list(loader)
        assert columns == {} and len(labels) == 36


def test_a_column_member_over_column_max_bytes_is_skipped_and_counted(column_shards):
    # Captions are 15-16 bytes; sample 5's non-UTF-8 text is 10.
    with flowloader.DataLoader(column_shards, batch_size=36, image_size=16, columns=["txt"],
                               column_max_bytes=12, epochs=1, return_columns=True) as loader:
        (_, labels, columns), = list(loader)
        assert columns == {"txt": [NOT_UTF8]}
        assert loader.stats()["errors"] == {"column_too_large": 35}


def test_data_where_every_sample_lacks_a_column_is_refused_saying_so(column_shards):
    with pytest.raises(ValueError, match=r"no sample with an image and a label and every "
                                         r"column \(columns: seg\) in 2 shard\(s\) "
                                         r"\(samples failed: 36 × missing_column\)"):
        flowloader.DataLoader(column_shards, columns=["seg"])


def test_sources_keyword_mixes_by_weight_and_names_each_rows_source(small_data, column_shards):
    with flowloader.DataLoader(
            sources=[{"name": "photos", "data": small_data, "weight": 3},
                     {"name": "shards", "data": column_shards, "weight": 1}],
            epoch_samples=40, batch_size=8, image_size=16, return_keys=True,
            return_sources=True) as loader:
        assert loader.source_names == ["photos", "shards"]
        counts = collections.Counter()
        for images, labels, keys, sources in loader:
            assert len(sources) == len(keys) == images.shape[0]
            for key, source in zip(keys, sources):
                assert (".tar/" in key) == (source == "shards")
            counts.update(sources)
        assert counts == {"photos": 30, "shards": 10}


def test_the_tuple_grows_only_at_the_end_in_a_fixed_order(small_data, column_shards):
    sources = [{"name": "a", "data": column_shards}, {"name": "b", "data": column_shards}]
    with flowloader.DataLoader(sources=sources, batch_size=4, image_size=16, columns="txt",
                               return_keys=True, return_sources=True,
                               return_columns=True) as loader:
        images, labels, keys, names, columns = next(iter(loader))
        assert labels.dtype == torch.int64 and len(keys) == 4
        assert set(names) <= {"a", "b"} and list(columns) == ["txt"]
    with flowloader.DataLoader(small_data, batch_size=4, image_size=16,
                               return_sources=True) as loader:
        assert loader.source_names == ["default"]
        images, labels, names = next(iter(loader))
        assert names == ["default"] * 4


def test_a_spec_with_sources_works_and_keywords_override_it(small_data, tmp_path):
    spec = tmp_path / "mix.yaml"
    spec.write_text(f"sources:\n  - {{name: x, data: {small_data}, weight: 1}}\n"
                    f"epoch_samples: 12\nbatch_size: 4\nimage_size: 16\n")
    with flowloader.DataLoader(spec=str(spec), return_sources=True) as loader:
        assert loader.source_names == ["x"]
        assert [len(s) for _, _, s in loader] == [4, 4, 4]
    with flowloader.DataLoader(spec=str(spec), sources=[{"name": "y", "data": small_data}],
                               return_sources=True) as loader:
        assert loader.source_names == ["y"]
    with flowloader.DataLoader(small_data, spec=str(spec)) as loader:  # data= beats sources:
        assert loader.source_names == ["default"]


@pytest.mark.parametrize("sources, message", [
    ([{"name": "a"}], "a source needs a name and data"),
    ([{"name": "a", "data": "d", "wieght": 2}],
     "unknown key 'wieght' in a source (did you mean 'weight'?)"),
    ([{"name": "a", "data": "d", "weight": 0}], "weight must be a number > 0, got '0'"),
    ([{"name": "a", "data": "d"}, {"name": "a", "data": "e"}],
     "two sources are named 'a' (names must be unique)"),
    ([], "sources must be a non-empty list of {name, data, weight}"),
])
def test_bad_sources_raise_the_spec_parsers_message(sources, message, tmp_path):
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(sources=sources)
    assert message in str(raised.value)
    # The CLI says the same of the same sources in a spec (JSON is YAML).
    spec = tmp_path / "s.yaml"
    spec.write_text("sources: " + json.dumps(sources) + "\n")
    cli = subprocess.run([FLOWLOADER_BIN, "run", f"--spec={spec}"], capture_output=True,
                         text=True)
    assert cli.returncode == 2 and message in cli.stderr, cli.stderr


@pytest.mark.parametrize("kwargs, error, pattern", [
    ({"sources": "a.tar"}, TypeError, "sources must be a list"),
    ({"sources": ["a.tar"]}, TypeError, "each source must be a dict"),
    ({"sources": [{"name": "a", "data": object()}]}, TypeError, "sources: "),
    ({"return_sources": 1}, TypeError, "return_sources must be True or False"),
    ({"return_columns": "yes"}, TypeError, "return_columns must be True or False"),
    ({"columns": "txt,a b"}, ValueError,
     r"--columns has 'a b', not a column name \(letters, digits and _"),
    ({"column_max_bytes": 0}, ValueError, "--column_max_bytes must be >= 1, got 0"),
    ({"http_ca_file": "/nonexistent/ca.pem"}, ValueError,
     "http_ca_file '/nonexistent/ca.pem' cannot be read: No such file or directory"),
])
def test_bad_keywords_raise(small_data, kwargs, error, pattern):
    if "sources" not in kwargs:
        kwargs = dict(kwargs, data=small_data)
    with pytest.raises(error, match=pattern):
        flowloader.DataLoader(**kwargs)


def test_data_and_sources_together_are_refused(small_data):
    with pytest.raises(ValueError, match="and sources are both set: give one of them"):
        flowloader.DataLoader(small_data, sources=[{"name": "a", "data": small_data}])


def test_list_file_columns_come_through_and_columns_picks_among_them(small_data, tmp_path):
    files = files_of(small_data)[:4]
    lines = ["#columns: path label caption url"]
    lines += [f"{os.path.join(small_data, f)}\t{i}\tcap {i}\tu{i}" for i, f in enumerate(files)]
    listing = tmp_path / "list.tsv"
    listing.write_text("\n".join(lines) + "\n")
    with flowloader.DataLoader(str(listing), batch_size=4, image_size=16, shuffle=False,
                               return_columns=True) as loader:
        _, labels, columns = next(iter(loader))
        assert columns == {"caption": [f"cap {i}" for i in range(4)],
                           "url": [f"u{i}" for i in range(4)]}
    with flowloader.DataLoader(str(listing), batch_size=4, image_size=16, shuffle=False,
                               columns="url", return_columns=True) as loader:
        _, _, columns = next(iter(loader))
        assert columns == {"url": [f"u{i}" for i in range(4)]}
