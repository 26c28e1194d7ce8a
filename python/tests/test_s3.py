"""s3:// from Python: flowloader.DataLoader("s3://bucket/prefix/") against a real Ceph RADOS
Gateway (tests/testing/radosgw.sh), with the s3_* keywords and the AWS variables: the same
batches as the files on disk, a wrong secret refused in one line without the secret, and
cache_dir / cache_bytes keeping every image on disk for the next loader."""

import os
import subprocess

import pytest
import torch

from conftest import files_of

import flowloader

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "testing", "radosgw.sh")


@pytest.fixture(scope="module")
def gateway(small_data, tmp_path_factory):
    """A running gateway holding small_data under s3://pyb/train/; yields its settings."""
    root = tmp_path_factory.mktemp("rgw") / "rgw"
    subprocess.run([SCRIPT, "start", str(root)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    env = dict(line.split("=", 1) for line in (root / "env").read_text().split())
    try:
        sign = ["--aws-sigv4", "aws:amz:us-east-1:s3", "-u",
                f"{env['RGW_ACCESS_KEY']}:{env['RGW_SECRET_KEY']}",
                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-sf", "-o", "/dev/null"]
        endpoint = env["RGW_ENDPOINT"]
        subprocess.run(["curl", *sign, "-X", "PUT", f"{endpoint}/pyb"], check=True)
        for f in files_of(small_data):
            subprocess.run(["curl", *sign, "-T", os.path.join(small_data, f),
                            f"{endpoint}/pyb/train/{f}"], check=True)
        yield env
    finally:
        subprocess.run([SCRIPT, "stop", str(root)], check=False)


def _batches(data, **kwargs):
    with flowloader.DataLoader(data, batch_size=8, image_size=24, seed=3, num_workers=2,
                               return_keys=True, **kwargs) as loader:
        return [(images.clone(), labels.clone(), keys) for images, labels, keys in loader]


def test_an_s3_prefix_gives_the_batches_of_the_same_files_on_disk(gateway, small_data,
                                                                  monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", gateway["RGW_ACCESS_KEY"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", gateway["RGW_SECRET_KEY"])
    remote = _batches("s3://pyb/train/", s3_endpoint=gateway["RGW_ENDPOINT"])
    local = _batches(small_data)
    assert len(remote) == len(local) == 5
    for (ri, rl, rk), (li, ll, lk) in zip(remote, local):
        assert torch.equal(ri, li) and torch.equal(rl, ll) and rk == lk


def test_a_wrong_secret_is_refused_in_one_line_without_the_secret(gateway, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", gateway["RGW_ACCESS_KEY"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(ValueError) as refused:
        flowloader.DataLoader("s3://pyb/train/", s3_endpoint=gateway["RGW_ENDPOINT"])
    message = str(refused.value)
    assert "SignatureDoesNotMatch" in message and "clock" in message, message
    assert "not-the-secret" not in message and "\n" not in message


def test_cache_dir_keeps_the_objects_for_the_next_loader(gateway, small_data, tmp_path,
                                                         monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", gateway["RGW_ACCESS_KEY"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", gateway["RGW_SECRET_KEY"])
    cache = tmp_path / "cache"
    keywords = dict(s3_endpoint=gateway["RGW_ENDPOINT"], cache_dir=str(cache),
                    cache_bytes="64MiB")
    cold = _batches("s3://pyb/train/", **keywords)
    entries = [p for p in (cache / "flowloader-cache").glob("??/*") if p.is_file()]
    assert len(entries) == len(files_of(small_data))  # One entry per image.
    # The second loader lists the prefix and reads every image from the disk.
    warm = _batches("s3://pyb/train/", **keywords)
    local = _batches(small_data)
    for run in (cold, warm):
        assert len(run) == len(local)
        for (ri, rl, rk), (li, ll, lk) in zip(run, local):
            assert torch.equal(ri, li) and torch.equal(rl, ll) and rk == lk
