"""The hold rule, memory and threads over a loader's life, and Ctrl-C."""

import gc
import hashlib
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

from conftest import make_dataset

import flowloader


def digest(tensor):
    return hashlib.sha1(tensor.numpy().tobytes()).hexdigest()


def threads():
    return len(os.listdir("/proc/self/task"))


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_holding_20_batches_with_prefetch_3_keeps_every_one_intact(small_data):
    # Fails without the rule: the third held zero-copy batch would leave no free buffer
    # and next() would wait forever (the watchdog below turns that into a failure).
    held = []
    done = threading.Event()

    def consume():
        with flowloader.DataLoader(small_data, batch_size=2, prefetch_batches=3, image_size=16,
                                   epochs=0) as loader:
            for _ in range(3):  # 54 batches over 3 epochs, every one kept.
                for images, labels in loader:
                    held.append((images, labels, digest(images), labels.tolist()))
                    if len(held) == 20:
                        assert loader.held_batches == flowloader.hold_limit(3) == 2
        done.set()

    worker = threading.Thread(target=consume, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert done.is_set(), f"deadlocked after {len(held)} held batches"
    assert len(held) == 54
    for images, labels, sha, label_list in held:
        assert digest(images) == sha and labels.tolist() == label_list
    # The zero-copy ones are the first two; the rest are copies that own their memory.
    pointers = {images.data_ptr() for images, *_ in held}
    assert len(pointers) == len(held)


def test_a_loader_that_frees_each_batch_never_copies(small_data):
    with flowloader.DataLoader(small_data, batch_size=4, prefetch_batches=2,
                               image_size=16) as loader:
        pointers = set()
        for images, _ in loader:
            pointers.add(images.data_ptr())
            assert loader.held_batches == 1
            del images
        assert len(pointers) <= 2, "batches come from the pool's 2 buffers, zero-copy"


def test_del_mid_epoch_returns_threads_and_memory(tmp_path):
    data = make_dataset(tmp_path / "data", classes=2, images_per_class=20, min_side=96,
                        max_side=128)
    # oneTBB starts its worker threads with the first loader of the process and keeps them
    # for the process: one loader like the measured one, made and dropped first, takes them
    # out of the count (run alone, the test was 2 threads short).
    warm = flowloader.DataLoader(data, batch_size=16, image_size=224, prefetch_batches=3)
    next(iter(warm))
    warm.close()
    del warm
    gc.collect()
    before_threads = threads()
    loader = flowloader.DataLoader(data, batch_size=16, image_size=224, prefetch_batches=3)
    it = iter(loader)
    images, _ = next(it)
    pool_bytes = 3 * images.numel() * images.element_size()
    with_loader_rss = rss_bytes()
    assert threads() > before_threads
    del images, it, loader
    gc.collect()
    deadline = time.monotonic() + 30
    while threads() > before_threads and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threads() == before_threads
    assert rss_bytes() < with_loader_rss - pool_bytes // 2, "the batch pool was not freed"


def test_rss_stays_flat_over_20_epochs(small_data):
    with flowloader.DataLoader(small_data, batch_size=8, image_size=64) as loader:
        samples = []
        for epoch in range(20):
            for images, labels in loader:
                images.sum()
            if epoch == 2:
                after_warmup = rss_bytes()
        grown = rss_bytes() - after_warmup
    assert grown < 8 << 20, f"RSS grew {grown / 2**20:.1f} MiB from epoch 3 to 20"


def read_line_within(child, seconds):
    """The child's next stdout line, or "" if none comes within `seconds` (a child that
    ignores the signal must fail the test, not hang it)."""
    ready, _, _ = select.select([child.stdout], [], [], seconds)
    return child.stdout.readline().strip() if ready else ""


INTERRUPTED_CHILD = textwrap.dedent("""
    import sys, time
    import flowloader
    loader = flowloader.DataLoader(sys.argv[1], batch_size=8, num_workers=1, image_size=512,
                                   prefetch_batches=1, epochs=0)
    next(iter(loader))
    print("waiting", flush=True)
    try:
        while True:  # The loop only waits: the signal lands while next() blocks.
            for batch in loader:
                pass
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    loader.close()
    print("closed", flush=True)
""")


def assert_sigint_interrupts_within_a_second(child_script, data):
    """Runs `child_script` on `data`; once it prints "waiting", SIGINT must make it print
    "interrupted" within 1 s, then "closed", and exit 0."""
    # SIGINT raises KeyboardInterrupt in the child even when the test runner was started
    # with SIGINT ignored (`cmd &` in a script), which the child would inherit.
    sigint_raises = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    child = subprocess.Popen([sys.executable, "-c", sigint_raises + child_script, data],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stderr_of_killed():  # A failed check must not wait on a child that runs on.
        child.kill()
        return child.stderr.read()

    try:
        first = read_line_within(child, 60)
        assert first == "waiting", stderr_of_killed()
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        line = read_line_within(child, 10)
        elapsed = time.monotonic() - sent
        assert line == "interrupted", stderr_of_killed()
        assert elapsed < 1.0, f"KeyboardInterrupt came {elapsed:.2f} s after SIGINT"
        assert child.stdout.readline().strip() == "closed"
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()


def test_ctrl_c_raises_keyboard_interrupt_within_a_second(tmp_path):
    data = make_dataset(tmp_path / "big", classes=1, images_per_class=16, min_side=1800,
                        max_side=2000)
    assert_sigint_interrupts_within_a_second(INTERRUPTED_CHILD, data)


BLOCKED_CHILD = textwrap.dedent("""
    import sys
    from flowloader import _flowloader
    # The core loader, below DataLoader's hold rule: keeping the only buffer's view makes
    # the next next() wait for a buffer that never comes back, so only the signal ends it.
    settings = [("data", sys.argv[1]), ("prefetch_batches", "1"), ("batch_size", "4"),
                ("image_size", "16"), ("epochs", "0")]
    core = _flowloader._Loader(None, settings, "", [0, 0, -1, 0])
    kept = core.next(False)
    print("waiting", flush=True)
    try:
        core.next(False)
        print("returned", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    core.close()
    print("closed", flush=True)
""")


def test_ctrl_c_ends_a_wait_that_would_never_end(small_data):
    assert_sigint_interrupts_within_a_second(BLOCKED_CHILD, small_data)
