"""A loader's lifecycle in a Python process: fork, Ctrl-C with a blocked __getitem__,
close(), and calls into a loader from its own Dataset or Lambda.

Every case runs in a child process with a timeout, so a regression (a hang) fails the test
instead of hanging the suite. The targets are 1 s; the tests allow more (the machines
running them have 2 loaded cores) but far less than the 27 s or the endless wait that
these cases took before.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import files_of

# What the tests allow for a target of 1 s, on 2 cores shared with other builds.
SLACK_SECONDS = 4.0


# Ctrl-C's KeyboardInterrupt in a child, whatever the test runner's own SIGINT: Python
# installs its handler only when SIGINT is not ignored, and a runner started in the
# background of a script (`cmd &`) passes SIGINT on ignored.
SIGINT_RAISES = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"


def run_child(script, *args, timeout=90):
    """Runs `script` in a fresh python3 (SIGINT raising KeyboardInterrupt); returns
    (returncode, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-c", SIGINT_RAISES + textwrap.dedent(script),
                           *args], capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def results(stdout):
    """The child's `key=value` lines as a dict of str."""
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


def first_jpeg(root):
    return os.path.join(root, files_of(root)[0])


# -- fork ---------------------------------------------------------------------------------
FORK = """
    import os, sys, time
    import flowloader

    def forked(child):
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            child()
        deadline = start + 30
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return time.monotonic() - start, os.waitstatus_to_exitcode(status)
            time.sleep(0.01)
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        return None, None

    def only_exits():
        sys.exit(0)

    # torch's own teardown at exit takes seconds on a loaded machine: the baseline.
    seconds, code = forked(only_exits)
    print(f"baseline={seconds} {code}", flush=True)
    loader = flowloader.DataLoader(sys.argv[1], batch_size=4, image_size=16, num_workers=2)
    it = iter(loader)
    next(it)  # Live: its workers are prefetching.

    def uses_the_inherited_loader():
        try:
            next(iter(loader))
            os._exit(3)
        except RuntimeError as e:
            os._exit(0 if "do not survive fork" in str(e) and "\\n" not in str(e) else 4)

    def makes_its_own():
        # oneTBB's threads did not survive the fork either: refused, not a loader that
        # never delivers.
        try:
            flowloader.DataLoader(sys.argv[1], batch_size=4, image_size=16)
            os._exit(5)
        except RuntimeError as e:
            os._exit(0 if "spawn" in str(e) and "\\n" not in str(e) else 6)

    for name, child in [("exit", only_exits), ("inherited", uses_the_inherited_loader),
                        ("own", makes_its_own)]:
        seconds, code = forked(child)
        print(f"{name}={seconds} {code}", flush=True)
    images, labels = next(it)  # The parent's loader goes on.
    print(f"parent={images.shape[0]}", flush=True)
"""


def test_a_forked_child_exits_and_refuses_the_inherited_loader(small_data):
    code, out, err = run_child(FORK, small_data)
    assert code == 0, err[-3000:]
    got = results(out)
    baseline = float(got["baseline"].split()[0])
    for name in ("exit", "inherited", "own"):
        seconds, status = got[name].split()
        assert seconds != "None", f"the {name} child did not exit within 30 s"
        assert status == "0", f"the {name} child exited with {status}: {err[-3000:]}"
        if name == "exit":
            # sys.exit runs torch's own teardown, which alone takes seconds in a forked
            # child on a loaded machine (5.3 s measured with only `import torch`): beyond
            # what a child of a process without a loader takes.
            assert float(seconds) - baseline < SLACK_SECONDS, \
                f"the {name} child took {seconds} s, one without a loader {baseline:.2f} s"
        else:
            # The loader's part alone: from fork to exit within the 1 s target (0.3 s
            # measured on 2 loaded cores).
            assert float(seconds) < 1.0, f"the {name} child took {seconds} s from fork to exit"
    assert got["parent"] == "4"


MULTIPROCESSING = """
    import multiprocessing, sys, time
    import flowloader

    def work(x):
        return x * 2

    def own_loader(data):
        # A process that spawn started has no loader of its parent's: it makes its own.
        with flowloader.DataLoader(data, batch_size=4, image_size=16) as loader:
            images, labels = next(iter(loader))
        sys.exit(0 if images.shape[0] == 4 else 5)

    if __name__ == "__main__":
        loader = flowloader.DataLoader(sys.argv[1], batch_size=4, image_size=16)
        next(iter(loader))
        for method in ("fork", "spawn"):
            context = multiprocessing.get_context(method)
            start = time.monotonic()
            with context.Pool(2) as pool:
                assert pool.map(work, range(8)) == [x * 2 for x in range(8)]
            process = context.Process(target=work, args=(1,))
            process.start()
            process.join(30)
            print(f"{method}={time.monotonic() - start:.2f} {process.exitcode}", flush=True)
        process = multiprocessing.get_context("spawn").Process(target=own_loader,
                                                               args=(sys.argv[1],))
        process.start()
        process.join(60)
        print(f"spawned_loader={process.exitcode}", flush=True)
        next(iter(loader))
"""


def test_multiprocessing_fork_and_spawn_beside_a_live_loader(small_data, tmp_path):
    script = tmp_path / "pools.py"  # spawn's children import the main module by its path.
    script.write_text(textwrap.dedent(MULTIPROCESSING))
    done = subprocess.run([sys.executable, str(script), small_data], capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    got = results(done.stdout)
    seconds, status = got["fork"].split()
    # A pool of 2 and a process: three children of a process with torch, each exiting.
    assert status == "0" and float(seconds) < 4 * SLACK_SECONDS, got
    seconds, status = got["spawn"].split()
    assert status == "0", got  # spawn starts fresh interpreters: its time is theirs.
    assert got["spawned_loader"] == "0", got


TORCH_WORKERS = """
    import sys, time
    import torch
    import flowloader
    loader = flowloader.DataLoader(sys.argv[1], batch_size=4, image_size=16)
    it = iter(loader)
    next(it)
    data = torch.utils.data.TensorDataset(torch.arange(64))
    start = time.monotonic()
    for _ in range(2):
        seen = sorted(int(x) for (batch,) in torch.utils.data.DataLoader(
            data, batch_size=8, num_workers=2) for x in batch)
        assert seen == list(range(64))
    print(f"torch={time.monotonic() - start:.2f}", flush=True)
    next(it)
"""


def test_torch_dataloader_workers_beside_a_live_loader(small_data):
    code, out, err = run_child(TORCH_WORKERS, small_data)
    assert code == 0, err[-3000:]
    # Two epochs of torch's workers: each ends by joining its children, which must exit.
    assert float(results(out)["torch"]) < 4 * SLACK_SECONDS, out


# -- Ctrl-C and close() with a blocked __getitem__ ---------------------------------------
BLOCKED = """
    import os, signal, sys, threading, time
    import flowloader

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()
    unblock = threading.Event()

    class Blocking:
        def __len__(self):
            return 30
        def __getitem__(self, i):
            if i == 7 and not unblock.is_set():
                unblock.wait(float(sys.argv[2]))  # A network read that hangs.
            return JPEG, i % 3, i

    loader = flowloader.DataLoader(dataset=Blocking(), batch_size=2, image_size=16,
                                   num_workers=2, shuffle=False, epochs=1)
    seen = []
    threading.Timer(1.0, lambda: (globals().__setitem__("sent", time.monotonic()),
                                  os.kill(os.getpid(), signal.SIGINT))).start()
    try:
        for images, labels, index in loader:
            seen.extend(index)
    except KeyboardInterrupt:
        print(f"interrupt={time.monotonic() - sent:.3f}", flush=True)
    print(f"before={len(seen)}", flush=True)
    if sys.argv[3] == "close":
        start = time.monotonic()
        loader.close()
        print(f"close={time.monotonic() - start:.3f}", flush=True)
        print(f"abandoned={loader.stats()['abandoned_calls']['calls']}", flush=True)
    else:
        threading.Timer(0.5, unblock.set).start()
        for images, labels, index in loader:  # Continues where the first loop stopped.
            seen.extend(index)
        print(f"seen={sorted(seen)}", flush=True)
        print(f"once={len(seen) == len(set(seen))}", flush=True)
        loader.close()
    print(f"exiting={time.monotonic()}", flush=True)
"""


def test_ctrl_c_and_close_return_at_once_with_a_blocked_getitem(small_data):
    start = time.monotonic()
    code, out, err = run_child(BLOCKED, first_jpeg(small_data), "60", "close")
    total = time.monotonic() - start
    assert code == 0, err[-3000:]
    got = results(out)
    assert float(got["interrupt"]) < SLACK_SECONDS, got
    assert int(got["before"]) < 30
    assert float(got["close"]) < SLACK_SECONDS, f"close() took {got['close']} s"
    assert "dataset[7] (running" in got["abandoned"], got
    assert "abandoned 1 call(s) of Python code" in err and "dataset[7]" in err, err[-2000:]
    # The process exits too, without waiting for the blocked call (60 s).
    assert total < 30, f"the child took {total:.1f} s to exit"


# A call abandoned at exit that returns while the interpreter finalizes: CPython ends its
# thread (pthread_exit), and the unwinding aborted the process, "terminate called ...
# scoped_acquire::dec_ref(): thread state must be current!" (a hostile round's case:
# set_epoch, then exit, with a __getitem__ of 0.4 s), or "FATAL: exception not rethrown".
RETURNS_AT_EXIT = """
    import sys, time
    import numpy as np
    import flowloader
    import flowloader.transforms as T

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()

    class Slow:
        def __len__(self):
            return 8
        def __getitem__(self, i):
            time.sleep(float(sys.argv[3]))
            return JPEG, 0

    def slow_lambda(img):
        time.sleep(float(sys.argv[3]))

    if sys.argv[2] == "dataset":
        loader = flowloader.DataLoader(dataset=Slow(), batch_size=2, image_size=16,
                                       num_workers=1, prefetch_batches=1)
    else:
        loader = flowloader.DataLoader(
            sys.argv[4], batch_size=2, num_workers=1, prefetch_batches=1,
            transform=T.Compose([T.CenterCrop(8), T.Lambda(slow_lambda), T.ToTensor()]))
    next(iter(loader))
    print("exiting", flush=True)
"""


@pytest.mark.parametrize("where", ["dataset", "lambda"])
@pytest.mark.parametrize("seconds", ["0.35", "0.6"])
def test_a_call_returning_while_the_interpreter_exits_does_not_abort(small_data, where,
                                                                     seconds):
    for _ in range(3):
        start = time.monotonic()
        code, out, err = run_child(RETURNS_AT_EXIT, first_jpeg(small_data), where, seconds,
                                   small_data)
        assert "exiting" in out, err[-2000:]
        assert code == 0, err[-2000:]
        assert "terminate called" not in err and "FATAL" not in err, err[-2000:]
        assert time.monotonic() - start < 30


def test_a_new_loop_after_ctrl_c_continues_where_the_consumer_stopped(small_data):
    code, out, err = run_child(BLOCKED, first_jpeg(small_data), "20", "continue")
    assert code == 0, err[-3000:]
    got = results(out)
    assert "interrupt" in got, out
    assert got["seen"] == str(list(range(30))) and got["once"] == "True", got


STORM = """
    import os, signal, sys, threading, time
    import flowloader

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()

    class Slow:
        def __len__(self):
            return 120
        def __getitem__(self, i):
            time.sleep(0.002)
            return JPEG, 0, i

    loader = flowloader.DataLoader(dataset=Slow(), batch_size=3, image_size=16, num_workers=2)
    stop = threading.Event()
    armed = False

    def interrupt(signum, frame):  # Ctrl-C's KeyboardInterrupt, inside the loop only.
        if armed:
            raise KeyboardInterrupt

    def storm():  # Ctrl-C every 7 ms, landing anywhere in the loop.
        while not stop.wait(0.007):
            os.kill(os.getpid(), signal.SIGINT)

    signal.signal(signal.SIGINT, interrupt)
    threading.Thread(target=storm, daemon=True).start()
    interrupts = 0
    seen = []
    # Loops, each restarted after an interrupt, until 3 epochs of samples came: a loop
    # interrupted mid-epoch continues it, one interrupted at its very end (every batch
    # handed out) is followed by the next epoch, as a finished loop is.
    while len(seen) < 360:
        try:
            armed = True
            for images, labels, index in loader:
                seen.extend(index)
            armed = False
        except KeyboardInterrupt:
            armed = False
            interrupts += 1
    epochs = [sorted(seen[k * 120:(k + 1) * 120]) == list(range(120)) for k in range(3)]
    print(f"samples={len(seen)}", flush=True)
    if not all(epochs):  # What went wrong, for the test's message.
        print(f"order={seen}", flush=True)
    stop.set()
    time.sleep(0.05)
    print(f"interrupts={interrupts}", flush=True)
    print(f"exact={epochs}", flush=True)
"""


def test_every_sample_exactly_once_through_a_storm_of_ctrl_c(small_data):
    code, out, err = run_child(STORM, first_jpeg(small_data))
    assert code == 0, err[-3000:]
    got = results(out)
    assert int(got["interrupts"]) > 10, got
    assert got["samples"] == "360" and got["exact"] == "[True, True, True]", got


# -- calls into the loader from its own Dataset or Lambda --------------------------------
REENTRANT = """
    import sys, threading
    import flowloader
    import flowloader.transforms as T

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()
    errors = {}
    made = threading.Event()  # The loaders start reading before their names are bound.

    def attempt(name, call):
        try:
            call()
            errors[name] = "allowed"
        except RuntimeError as e:
            errors[name] = str(e)

    class Calling:
        def __len__(self):
            return 8
        def __getitem__(self, i):
            made.wait(30)
            if i == 0:
                attempt("getitem close", loader.close)
                attempt("getitem state_dict", loader.state_dict)
                attempt("getitem set_epoch", lambda: loader.set_epoch(1))
                attempt("getitem iter", lambda: next(iter(loader)))
                # A loader made here could not be closed here: dropping it printed
                # "Exception ignored in __del__" (round 7).
                attempt("getitem new", lambda: flowloader.DataLoader(sys.argv[2]))
            return JPEG, 0

    loader = flowloader.DataLoader(dataset=Calling(), batch_size=8, image_size=16, epochs=1)
    made.set()
    rows = sum(images.shape[0] for images, _ in loader)
    loader.close()

    made.clear()

    def closing(image):
        made.wait(30)
        attempt("lambda close", lambda: other.close())
        other.close()  # Uncaught: the sample is skipped as python_error.

    other = flowloader.DataLoader(sys.argv[2], batch_size=4, epochs=1,
                                  transform=T.Compose([T.RandomResizedCrop(16),
                                                       T.Lambda(closing)]))
    made.set()
    delivered = sum(images.shape[0] for images, _ in other)
    stats = other.stats()
    other.close()
    print(f"rows={rows}")
    print(f"delivered={delivered} skipped={stats['errors']}")
    for name, text in errors.items():
        print(f"{name}={text}")
"""


def test_calls_into_the_loader_from_its_dataset_or_lambda_raise(small_data):
    code, out, err = run_child(REENTRANT, first_jpeg(small_data), small_data)
    assert code == 0, f"exit {code} (-6 is the old SIGABRT): {err[-3000:]}"
    got = results(out)
    assert got["rows"] == "8", got
    assert got["delivered"] == "0 skipped={'python_error': 36}", got
    expected = {"getitem close": "DataLoader.close()",
                "getitem state_dict": "DataLoader.state_dict()",
                "getitem set_epoch": "DataLoader.set_epoch()",
                "getitem iter": "iterating a DataLoader",
                "getitem new": "making a DataLoader",
                "lambda close": "DataLoader.close()"}
    for name, what in expected.items():
        inside = "a transforms.Lambda" if name.startswith("lambda") else \
            "a Dataset's __getitem__"
        assert got[name].startswith(f"{what} is not allowed inside {inside}: "), got[name]
    assert "Lambda raised RuntimeError: DataLoader.close() is not allowed" in err
    assert "Exception ignored" not in err, err[-3000:]


# -- dataset= sizes ----------------------------------------------------------------------
class Sized:
    def __init__(self, length):
        self.length = length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        raise AssertionError("never read")


@pytest.mark.parametrize("length", [2**31, 2**62])
def test_a_dataset_whose_sample_table_cannot_fit_is_refused_in_one_line(length):
    import flowloader
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(dataset=Sized(length), batch_size=8)
    message = str(raised.value)
    assert "\n" not in message and len(message) < 400, message
    assert f"len() is {length} samples" in message and "epoch order would need" in message
    assert "memory_limit_mb" in message


HUGE_LEN = """
    import os, sys
    import flowloader

    def peak_kib():
        # This process's own peak RSS (VmHWM). Not ru_maxrss: across fork + exec it keeps
        # the parent's peak (the pytest process's, hundreds of MiB after the float tests).
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    class Huge:
        def __len__(self):
            return 2**24
        def __getitem__(self, i):
            return JPEG, i % 3

    before = rss_mib()
    loader = flowloader.DataLoader(dataset=Huge(), batch_size=4, image_size=16,
                                   num_workers=1, shuffle=False)
    print(f"created_mib={rss_mib() - before:.1f}", flush=True)
    images, labels = next(iter(loader))  # Reads 4 of 2^24 items.
    print(f"rows={images.shape[0]}")
    print(f"labels={labels.tolist()}")
    peak = peak_kib() / 1024
    print(f"read_mib={peak - before:.1f}", flush=True)
"""


def test_a_dataset_of_2_to_the_24_costs_at_most_16_bytes_a_sample(small_data):
    # Was 88 B a sample in the table alone (1.4 GiB) before anything was read.
    code, out, err = run_child(HUGE_LEN, first_jpeg(small_data))
    assert code == 0, err[-3000:]
    got = results(out)
    assert got["rows"] == "4" and got["labels"] == "[0, 1, 2, 0]", got
    # Made: no table at all (its samples are computed).
    assert float(got["created_mib"]) < 32, got
    # Read: the epoch's order, 8 B a sample (128 MiB), and the pipeline; within
    # 16 B a sample (256 MiB) at the peak.
    assert float(got["read_mib"]) < 256, got


def test_a_len_over_int64_is_refused_in_one_line():
    import flowloader
    with pytest.raises(ValueError) as raised:
        flowloader.DataLoader(dataset=Sized(2**70), batch_size=8)
    message = str(raised.value)
    assert "\n" not in message and f"len() is {2**70}" in message, message
    # A len() that is not an int is named as what it is (a str '5' read as "len() is 5").
    for length, shown in (("5", "len() is '5'"), (5.5, "len() is 5.5")):
        with pytest.raises(ValueError) as raised:
            flowloader.DataLoader(dataset=Sized(length), batch_size=8)
        assert shown in str(raised.value), str(raised.value)


TOO_LARGE = """
    import sys
    import flowloader

    def peak_kib():
        # This process's own peak RSS (VmHWM). Not ru_maxrss: across fork + exec it keeps
        # the parent's peak (the pytest process's, hundreds of MiB after the float tests).
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()
    HUGE = bytes(200 << 20)  # One object, shared by every big item.

    class Big:
        def __len__(self):
            return 12
        def __getitem__(self, i):
            return (HUGE if i % 3 == 0 else JPEG), 0

    before = peak_kib()
    with flowloader.DataLoader(dataset=Big(), batch_size=4, image_size=16, num_workers=2,
                               epochs=2) as loader:
        rows = sum(images.shape[0] for _ in range(2) for images, _ in loader)
        stats = loader.stats()
    grown = peak_kib() - before
    print(f"rows={rows}")
    print(f"errors={stats['errors']}")
    print(f"grown_mib={grown // 1024}")
"""


def test_a_dataset_item_over_max_item_bytes_is_skipped_uncopied(small_data):
    code, out, err = run_child(TOO_LARGE, first_jpeg(small_data))
    assert code == 0, err[-3000:]
    got = results(out)
    assert got["rows"] == "16" and got["errors"] == "{'too_large': 8}", got
    # A copy of a 200 MiB item per worker would be 400 MiB.
    assert int(got["grown_mib"]) < 150, got
    assert "dataset[0]'s sample is 209715200 bytes, over max_item_bytes 67108864" in err


HUGE_LAMBDA = """
    import io, sys
    import numpy as np
    from PIL import Image
    import flowloader
    import flowloader.transforms as T

    def peak_kib():
        # This process's own peak RSS (VmHWM). Not ru_maxrss: across fork + exec it keeps
        # the parent's peak (the pytest process's, hundreds of MiB after the float tests).
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()
    SMALL = io.BytesIO()
    Image.new("RGB", (30, 30), (9, 99, 199)).save(SMALL, "JPEG")

    class Files:
        def __len__(self):
            return 12
        def __getitem__(self, i):
            return (SMALL.getvalue() if i % 3 == 0 else JPEG), i

    def grow(img):
        # 300 MiB of zeros for the 30x30 images: calloc'd, so only a copy touches them.
        return np.zeros((10000, 10000, 3), np.uint8) if img.shape[:2] == (30, 30) else img

    before = peak_kib()
    with flowloader.DataLoader(dataset=Files(), batch_size=4, num_workers=2, epochs=1,
                               memory_limit_mb=600,
                               transform=T.Compose([T.Lambda(grow), T.Resize((16, 16)),
                                                    T.ToTensor()])) as loader:
        rows = sum(images.shape[0] for images, _ in loader)
        stats = loader.stats()
    grown = peak_kib() - before
    print(f"rows={rows}")
    print(f"errors={stats['errors']}")
    print(f"grown_mib={grown // 1024}")
"""


def test_a_lambda_result_over_the_worker_memory_is_skipped_uncopied(small_data):
    # Was copied in whole (300 MiB a worker, over memory_limit_mb=600).
    code, out, err = run_child(HUGE_LAMBDA, first_jpeg(small_data))
    assert code == 0, err[-3000:]
    got = results(out)
    assert got["rows"] == "8" and got["errors"] == "{'op_memory': 4}", got
    assert int(got["grown_mib"]) < 150, got
    assert "a transforms.Lambda's 10000x10000 result needs" in err, err[-3000:]


# -- round 7 ------------------------------------------------------------------------------
FORK_WHILE_WAITING = """
    import os, sys, threading, time
    import flowloader
    import flowloader.transforms as T

    release = threading.Event()
    loader = flowloader.DataLoader(sys.argv[1], batch_size=2, shuffle=False, num_workers=2,
                                   transform=T.Compose([T.CenterCrop(16),
                                                        T.Lambda(lambda im: release.wait(60)),
                                                        T.ToTensor()]))
    it = iter(loader)
    # A thread waits in next(), holding the loader's iteration lock, when the fork comes.
    threading.Thread(target=lambda: next(it, None), daemon=True).start()
    time.sleep(0.5)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            iter(loader)  # Waited for ever for the lock the parent's thread held.
            os._exit(3)
        except RuntimeError as e:
            os._exit(0 if "do not survive fork" in str(e) else 4)
    code = "hung"
    while time.monotonic() - start < 20:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        time.sleep(0.01)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    print(f"child={time.monotonic() - start:.2f} {code}", flush=True)
    release.set()
"""


def test_a_child_forked_while_a_thread_waits_in_next_refuses_the_loader(small_data):
    code, out, err = run_child(FORK_WHILE_WAITING, small_data)
    assert code == 0, err[-3000:]
    seconds, status = results(out)["child"].split()
    assert status == "0", out  # "hung" before: killed after 20 s.
    assert float(seconds) < 1.0 + SLACK_SECONDS, out


CLOSED_UNDER_NEXT = """
    import sys, threading, time
    import flowloader

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()
    release = threading.Event()

    class Blocking:
        def __len__(self):
            return 30
        def __getitem__(self, i):
            if i == 7:
                release.wait(60)
            return JPEG, 0

    loader = flowloader.DataLoader(dataset=Blocking(), batch_size=2, image_size=16,
                                   shuffle=False)
    got = {}

    def loop():
        try:
            for _ in loader:
                pass
        except Exception as e:
            got["error"] = f"{type(e).__name__}: {e}"

    thread = threading.Thread(target=loop)
    thread.start()
    time.sleep(0.8)
    loader.close()
    thread.join(10)
    print(f"error={got.get('error')}", flush=True)
    # At exit, a daemon thread waiting in next() of a loader the exit closes ends quietly.
    second = flowloader.DataLoader(dataset=Blocking(), batch_size=2, image_size=16,
                                   shuffle=False)
    threading.Thread(target=lambda: [None for _ in second], daemon=True).start()
    time.sleep(0.8)
"""


def test_a_next_that_a_close_ends_says_so_and_a_daemons_ends_quietly_at_exit(small_data):
    code, out, err = run_child(CLOSED_UNDER_NEXT, first_jpeg(small_data))
    assert code == 0, err[-3000:]
    # Was "DataError: the pipeline was stopped", and at exit that traceback per thread.
    assert results(out)["error"].startswith("ValueError: the DataLoader was closed while "
                                            "this call waited for it (close() from "
                                            "another thread"), out
    assert "Traceback" not in err and "Exception in thread" not in err, err[-3000:]


HANDLER_DURING_NEXT = """
    import os, signal, sys, threading, time
    import flowloader

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()
    release = threading.Event()

    class Blocking:
        def __len__(self):
            return 30
        def __getitem__(self, i):
            if i == 7:
                release.wait(3)
            return JPEG, 0

    for call in ("close", "set_epoch_and_iterate", "iterate", "load_state_dict"):
        release.clear()
        loader = flowloader.DataLoader(dataset=Blocking(), batch_size=2, image_size=16,
                                       shuffle=False)

        def handler(signum, frame, call=call, loader=loader):
            # Runs inside next()'s wait (PyErr_CheckSignals), on the iterating thread.
            if call == "close":
                loader.close()
            elif call == "set_epoch_and_iterate":
                loader.set_epoch(1)
                next(iter(loader), None)
            elif call == "iterate":
                iter(loader)
            else:
                loader.load_state_dict(loader.state_dict())
                iter(loader)

        signal.signal(signal.SIGUSR1, handler)
        threading.Timer(0.6, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        threading.Timer(1.5, release.set).start()
        try:
            for _ in loader:
                pass
            outcome = "ended"
        except Exception as e:
            outcome = f"{type(e).__name__}: {e}"
        print(f"{call}={outcome}", flush=True)
        time.sleep(1.0)
        loader.close()
"""


def test_a_signal_handler_that_closes_or_reiterates_the_loader_during_next(small_data):
    # The handler freed the pipeline that the interrupted next() then used: a segfault
    # (exit code -11) or a wait on freed memory.
    code, out, err = run_child(HANDLER_DURING_NEXT, first_jpeg(small_data))
    assert code == 0, f"exit {code}: {err[-3000:]}"
    got = results(out)
    for call in ("close", "set_epoch_and_iterate"):  # Each freed the pipeline.
        assert got[call].startswith("ValueError: the DataLoader was closed while this "
                                    "call waited for it (close() from another thread or a "
                                    "signal handler"), got[call]
    for call in ("iterate", "load_state_dict"):  # The same position: a newer iterator.
        assert got[call] == "RuntimeError: this iterator was replaced by a newer " \
                            "iter(loader)", got[call]


DAEMONS_WITHOUT_GIL_AT_EXIT = """
    import sys, threading, time
    import numpy as np
    import flowloader
    import flowloader.transforms as T

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()

    class Blocked:
        def __len__(self):
            return 30
        def __getitem__(self, i):
            if i == 3:
                time.sleep(2)
            return JPEG, 0

    loader = flowloader.DataLoader(dataset=Blocked(), batch_size=2, image_size=16,
                                   shuffle=False, num_workers=1, prefetch_batches=1)
    next(iter(loader))
    time.sleep(0.2)  # dataset[3] is in flight: close() waits 0.3 s before abandoning it.
    threading.Thread(target=loader.close, daemon=True).start()

    def loop(call):
        while True:
            call()

    # No float tensor: freeing any torch tensor takes the GIL back inside torch's own
    # dealloc (THPVariable_subclass_dealloc), which aborts a daemon thread at exit with or
    # without flowloader (seen 2 in 130 runs with T.Resize on a float tensor here).
    pixels = np.zeros((1500, 1500, 3), np.uint8)
    for call in (lambda: T.Resize(1200)(pixels),
                 lambda: flowloader.DataLoader(sys.argv[2], batch_size=2, image_size=16,
                                               num_workers=1).close()):
        threading.Thread(target=loop, args=(call,), daemon=True).start()
    time.sleep(0.1)

    class FinalizesSlowly:  # A module global: its __del__ runs while the interpreter
        def __del__(self):  # finalizes, and its sleep lets the daemons take the GIL.
            time.sleep(0.6)

    keeper = FinalizesSlowly()
    print("exiting", flush=True)
"""


def test_daemon_threads_in_close_an_eager_op_or_a_new_loader_at_exit_do_not_abort(small_data):
    # Each daemon thread has released the GIL (close()'s wait for a blocked __getitem__,
    # an eager transform's compute, a loader's Create) when the interpreter finalizes;
    # taking it back, CPython ends the thread with pthread_exit, whose unwinding through
    # pybind11's gil_scoped_release aborted the process ("terminate called without an
    # active exception", exit code 134): every run for close() and the eager ops.
    code, out, err = run_child(DAEMONS_WITHOUT_GIL_AT_EXIT, first_jpeg(small_data), small_data)
    assert "exiting" in out, err[-2000:]
    assert code == 0, f"exit {code}: {err[-2000:]}"
    assert "terminate called" not in err and "FATAL" not in err, err[-2000:]


CLOSED_UNDER_TWO_LOOPS = """
    import random, sys, threading, time
    import flowloader

    random.seed(0)
    errors = set()
    for k in range(200):
        loader = flowloader.DataLoader(sys.argv[1], batch_size=2, image_size=16,
                                       num_workers=1, prefetch_batches=1)

        def loop():
            try:
                while True:
                    for _ in loader:
                        pass
                    loader.state_dict()
            except Exception as e:
                errors.add(f"{type(e).__name__}: {e}")

        threads = [threading.Thread(target=loop) for _ in range(2)]
        for t in threads:
            t.start()
        time.sleep(random.random() * 0.01)
        loader.close()
        for t in threads:
            t.join()
    for error in sorted(errors):
        print(f"error={error}", flush=True)
"""


def test_close_while_two_threads_iterate_frees_the_loader_after_they_let_go(small_data):
    # close() freed the loader while the other threads' next() or state_dict() still
    # waited on it: a heap corruption ("tcache_thread_shutdown(): unaligned tcache chunk
    # detected", exit code 134) within 125 rounds in each of 5 runs.
    code, out, err = run_child(CLOSED_UNDER_TWO_LOOPS, small_data)
    assert code == 0, f"exit {code}: {err[-2000:]}"
    errors = [line.split("=", 1)[1] for line in out.splitlines() if line.startswith("error=")]
    allowed = ("ValueError: the DataLoader was closed while this call waited for it",
               "ValueError: the DataLoader is closed",
               "RuntimeError: this iterator was replaced by a newer iter(loader)")
    assert errors and all(e.startswith(allowed) for e in errors), errors


FORKED_IN_A_CALL = """
    import os, signal, sys, time
    import flowloader
    import flowloader.transforms as T

    with open(sys.argv[1], "rb") as f:
        JPEG = f.read()
    children = {}

    def reap(pid, seconds=5):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return "hang"

    def fork_and(how):
        pid = os.fork()
        if pid == 0:  # The child, on the loader's worker thread.
            if how == "exit3":
                sys.exit(3)
            if how == "raise":
                raise ValueError("in the child")
            return
        children[how] = pid

    class Forking:
        def __len__(self):
            return 8
        def __getitem__(self, i):
            how = ("return", "exit3", "raise")[i] if i < 3 else None
            if how is not None and how not in children:  # Once: the next epoch prefetches.
                fork_and(how)
            return JPEG, 0

    loader = flowloader.DataLoader(dataset=Forking(), batch_size=2, image_size=16,
                                   shuffle=False, num_workers=1)
    rows = sum(len(labels) for _, labels in loader)
    lambdas = flowloader.DataLoader(
        sys.argv[2], batch_size=2, num_workers=1, shuffle=False,
        transform=T.Compose([T.CenterCrop(8), T.Lambda(
            lambda img: None if "lambda" in children else fork_and("lambda")), T.ToTensor()]))
    next(iter(lambdas))
    for how, pid in sorted(children.items()):
        print(f"{how}={reap(pid)}", flush=True)
    print(f"rows={rows}", flush=True)
"""


def test_a_child_forked_inside_getitem_or_a_lambda_exits_when_it_comes_back(small_data):
    # A child forked on a worker thread that returned (or raised, or called sys.exit,
    # which the call caught as any exception) to the worker went on as a pipeline thread
    # with no pipeline: it never exited.
    code, out, err = run_child(FORKED_IN_A_CALL, first_jpeg(small_data), small_data)
    assert code == 0, err[-2000:]
    got = results(out)
    assert got == {"exit3": "3", "lambda": "0", "raise": "1", "return": "0", "rows": "8"}, \
        (got, err[-2000:])
    lines = [line for line in err.splitlines() if "forked inside" in line]
    assert len(lines) == 3, err[-2000:]  # return, raise and the Lambda's; sys.exit is quiet.
    assert any("(forked inside dataset[2] in process" in line and "raised ValueError: in the "
               "child on the loader's worker thread" in line and "exits with code 1" in line
               for line in lines), lines


TORCH_IN_A_DAEMON_AT_EXIT = """
    import sys, threading, time
    import torch
    import flowloader

    loader = flowloader.DataLoader(sys.argv[1], batch_size=2, image_size=16,
                                   num_workers=1)

    def loop():  # A training loop in a daemon thread: torch releases the GIL in its ops.
        a = torch.rand(500, 500)
        while True:
            for images, labels in loader:
                for _ in range(3):
                    a @ a

    threading.Thread(target=loop, daemon=True).start()
    time.sleep(0.5)

    class FinalizesSlowly:  # Lets threads take the GIL while the interpreter finalizes.
        def __del__(self):
            time.sleep(0.6)

    keeper = FinalizesSlowly()
    print("exiting", flush=True)
"""


def test_a_daemon_thread_ending_its_loop_at_exit_finishes_before_finalization(small_data):
    # The exit closed the loader and finalized at once, while the daemon thread was in a
    # torch op (or freeing a batch, which torch does without the GIL too): torch took the
    # GIL back during finalization inside its gil_scoped_release, std::terminate (exit
    # code 134; about 1 exit in 150 with daemon threads iterating, 3 runs in 3 here). The
    # exit now waits up to 0.5 s for the threads that iterated a loader: their next()
    # raises SystemExit.
    code, out, err = run_child(TORCH_IN_A_DAEMON_AT_EXIT, small_data)
    assert "exiting" in out, err[-2000:]
    assert code == 0, f"exit {code}: {err[-2000:]}"
    assert "terminate called" not in err, err[-2000:]
