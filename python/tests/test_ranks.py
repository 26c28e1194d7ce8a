"""Ranks: from the environment, torch.distributed.run with gloo, DistributedSampler's shards."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

from conftest import files_of, run_python

import flowloader


def shard_keys(data, **kwargs):
    with flowloader.DataLoader(data, batch_size=5, image_size=16, shuffle=False,
                               return_keys=True, **kwargs) as loader:
        return [k for _, _, keys in loader for k in keys]


@pytest.mark.parametrize("world_size", [2, 3, 4, 6])
@pytest.mark.parametrize("even_shards,drop_last", [("pad", False), ("trim", True)])
def test_shards_equal_distributed_samplers(odd_data, world_size, even_shards, drop_last):
    files = files_of(odd_data)
    for rank in range(world_size):
        sampler = DistributedSampler(range(len(files)), num_replicas=world_size, rank=rank,
                                     shuffle=False, drop_last=drop_last)
        expected = [files[i] for i in sampler]
        got = shard_keys(odd_data, rank=rank, world_size=world_size, even_shards=even_shards)
        assert got == expected, (rank, world_size, even_shards)


@pytest.mark.parametrize("env,rank,world_size,source", [
    ({"RANK": "1", "WORLD_SIZE": "3"}, 1, 3, "RANK/WORLD_SIZE"),
    ({"SLURM_PROCID": "2", "SLURM_NTASKS": "4"}, 2, 4, "SLURM_PROCID/SLURM_NTASKS"),
    ({"RANK": "0", "WORLD_SIZE": "2", "SLURM_PROCID": "3", "SLURM_NTASKS": "4"}, 0, 2,
     "RANK/WORLD_SIZE"),
    ({}, 0, 1, "default"),
])
def test_rank_and_world_size_come_from_the_environment(small_data, env, rank, world_size, source):
    clean = {k: "" for k in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS")}
    code = textwrap.dedent(f"""
        import os, flowloader
        for k in {list(clean)!r}:
            if not os.environ.get(k):
                os.environ.pop(k, None)
        l = flowloader.DataLoader({small_data!r}, image_size=16)
        print(l.rank, l.world_size, l.shard_source)
    """)
    env_all = {**{k: "" for k in clean}, **env}
    out = run_python(code, env=env_all)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(rank), str(world_size), *source.split()]


def test_arguments_beat_the_environment(small_data, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with flowloader.DataLoader(small_data, rank=2, world_size=3, image_size=16) as loader:
        assert (loader.rank, loader.world_size, loader.shard_source) == (2, 3, "arguments")


def test_a_bad_environment_is_a_value_error(small_data, monkeypatch):
    monkeypatch.setenv("RANK", "first")
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="RANK='first' is not an integer"):
        flowloader.DataLoader(small_data)


TORCHRUN_WORKER = textwrap.dedent("""
    import datetime, json, os, sys
    import torch.distributed as dist
    import flowloader
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
    rank = dist.get_rank()
    with flowloader.DataLoader(sys.argv[1], batch_size=4, image_size=16, seed=3,
                               return_keys=True) as loader:
        epochs = []
        for epoch in range(2):
            loader.set_epoch(epoch)
            epochs.append([k for _, _, keys in loader for k in keys])
        info = {"rank": loader.rank, "world_size": loader.world_size,
                "source": loader.shard_source, "epochs": epochs}
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, info)
    if rank == 0:
        with open(sys.argv[2], "w") as f:
            json.dump(gathered, f)
    dist.destroy_process_group()
""")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_ranks_get_disjoint_shards_that_cover_the_data(small_data, tmp_path):
    worker = tmp_path / "worker.py"
    worker.write_text(TORCHRUN_WORKER)
    out = tmp_path / "shards.json"
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS")}
    # --redirects/--tee: Debian's torch 1.13 on Python 3.11 cannot read their default "0"
    # (IntFlag no longer iterates Std.NONE, so Std.from_str("0") is None and the launcher
    # crashes in to_map); 2 (stderr, tee'd to the console) is read correctly.
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                          f"--master_port={free_port()}", "--redirects=2", "--tee=2", str(worker),
                          small_data, str(out)],
                         env=env, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    ranks = json.loads(out.read_text())
    assert [(r["rank"], r["world_size"], r["source"]) for r in ranks] == [
        (0, 2, "RANK/WORLD_SIZE"), (1, 2, "RANK/WORLD_SIZE")]
    files = files_of(small_data)
    for epoch in range(2):
        a, b = ranks[0]["epochs"][epoch], ranks[1]["epochs"][epoch]
        assert len(a) == len(b) == len(files) // 2
        assert not set(a) & set(b)
        assert sorted(a + b) == sorted(files)
    assert ranks[0]["epochs"][0] != ranks[0]["epochs"][1], "set_epoch reshuffles"
