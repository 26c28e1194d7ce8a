# runners.py: runs one measurement of one system as a child process and returns a dict.
#
#   run_flowloader(bins, data, transform="train", num_workers=2, ...)
#   run_torch(data, transform="train", num_workers=2, ...)
#   run_roofline(bins, data, threads=2)
#
# Every run: spawned with start_new_session (so a hung run can be killed as a group, by
# its own id), stdout/stderr to temp files, a procmem.TreeSampler on its process tree
# (RSS every 20 ms; PSS too when pss=True), reaped with os.wait4 for the CPU time of the
# whole tree (user+sys, waited-for workers included). Returns the system's own JSON plus
# wall_seconds (spawn to exit), cpu_seconds, memory peaks and the figures the report uses:
#   ips_after_first  images/s over the epoch after the first batch
#   ips_with_startup images/s over the whole run, process start included
#   ttfb_seconds     time to first batch from process start
import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request

import procmem

# Debian's torch here; the GPU machine has no /usr/bin/python3 torch, so the caller may override.
PYTHON = os.environ.get("BENCH_PYTHON", "/usr/bin/python3")
HERE = os.path.dirname(os.path.abspath(__file__))

# Measured once by the benchmark: spawn→exit of `flowloader stages`, an upper bound on
# the exec + dynamic-loading time before flowloader's main() starts its own clock.
FLOWLOADER_EXEC_SECONDS = 0.0


class RunFailed(RuntimeError):
    pass


def _pinned(cmd, taskset):
    """cmd under `taskset -c CPUS` when taskset (a CPU list such as "0-7") is given."""
    return ["taskset", "-c", taskset] + cmd if taskset else cmd


def _spawn_and_wait(cmd, timeout, pss, env=None):
    out = tempfile.TemporaryFile(mode="w+")
    err = tempfile.TemporaryFile(mode="w+")
    env = dict(os.environ if env is None else env)
    spawn = time.time()
    env["BENCH_SPAWN_TIME"] = repr(spawn)
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env, start_new_session=True)
    sampler = procmem.TreeSampler(proc.pid, pss=pss)
    sampler.start()
    killed = []

    def _kill():
        killed.append(True)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(timeout, _kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.time() - spawn
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    mem = sampler.stop()
    out.seek(0)
    err.seek(0)
    stdout, stderr = out.read(), err.read()
    out.close()
    err.close()
    result = {
        "cmd": cmd,
        "rc": proc.returncode,
        "wall_seconds": wall,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "spawn_time": spawn,
        **mem,
    }
    if killed:
        raise RunFailed(f"timed out after {timeout}s: {' '.join(cmd)}\n{stderr[-2000:]}")
    return result, stdout, stderr


def run_flowloader(bins, data, transform="train", num_workers=2, batch_size=64, epochs=1,
                   shuffle=None, metrics_address="", pss=False, timeout=300, seed=0,
                   prefetch_batches=None, layout="float_chw", device="cpu", taskset=None):
    # prefetch_batches None: flowloader's default, as PyTorch runs with its own default.
    if shuffle is None:
        shuffle = transform == "train"
    with tempfile.TemporaryDirectory(prefix="flowloader-bench-") as tmp:
        summary_path = os.path.join(tmp, "summary.json")
        cmd = [os.path.join(bins, "flowloader"), "run", f"--data={data}",
               f"--transform={transform}", f"--num_workers={num_workers}",
               f"--batch_size={batch_size}",
               f"--epochs={epochs}", f"--seed={seed}", f"--shuffle={str(shuffle).lower()}",
               "--image_size=224", "--on_error=skip", f"--layout={layout}", f"--device={device}",
               f"--metrics_address={metrics_address}", "--progress=false",
               f"--summary_json={summary_path}"]
        if prefetch_batches is not None:
            cmd.append(f"--prefetch_batches={prefetch_batches}")
        result, stdout, stderr = _spawn_and_wait(_pinned(cmd, taskset), timeout, pss)
        if result["rc"] != 0 or not os.path.exists(summary_path):
            raise RunFailed(f"flowloader rc={result['rc']}: {' '.join(cmd)}\n"
                            f"{stdout[-2000:]}\n{stderr[-2000:]}")
        with open(summary_path) as f:
            summary = json.load(f)
    first_rows = min(batch_size, summary["samples"])
    after_first_window = summary["seconds"] - summary["first_batch_seconds"]
    # Epochs 2+ on their own: from the end of epoch 1 to the end of the last one. Later
    # epochs decode faster (the decoder's seek indexes, learned in epoch 1, let it start
    # near each crop), so they are reported apart from the whole-run rate.
    ends = summary.get("epoch_end_seconds") or []
    ips_later = None
    if epochs >= 2 and len(ends) == epochs and ends[-1] > ends[0]:
        ips_later = summary["samples"] / epochs * (epochs - 1) / (ends[-1] - ends[0])
    result.update({
        "system": "flowloader",
        "transform": transform,
        "num_workers": num_workers,
        "batch_size": batch_size,
        "epochs": epochs,
        "metrics": bool(metrics_address),
        "summary": summary,
        "stdout_tail": stdout[-1500:],
        "samples": summary["samples"],
        # flowloader's clock for `seconds` starts at Pipeline::Create, its first-batch
        # clock at main(); the gap between the two is flag parsing (microseconds).
        "ips_after_first": ((summary["samples"] - first_rows) / after_first_window
                            if after_first_window > 0 else 0.0),
        "ips_reported": summary["images_per_second"],
        "ips_later_epochs": ips_later,
        "ips_with_startup": summary["samples"] / (summary["seconds"] + FLOWLOADER_EXEC_SECONDS),
        "ttfb_seconds": summary["first_batch_seconds"],
        "ttfb_from_spawn_est_seconds": summary["first_batch_seconds"] + FLOWLOADER_EXEC_SECONDS,
    })
    return result


def run_torch(data, transform="train", num_workers=2, batch_size=64, pss=False, timeout=600,
              seed=0, device="cpu", taskset=None):
    cmd = [PYTHON, os.path.join(HERE, "torch_loader.py"), f"--data={data}",
           f"--transform={transform}", f"--num_workers={num_workers}",
           f"--batch_size={batch_size}", f"--seed={seed}", "--image_size=224",
           f"--device={device}"]
    result, stdout, stderr = _spawn_and_wait(_pinned(cmd, taskset), timeout, pss)
    lines = [l for l in stdout.splitlines() if l.startswith("{")]
    if result["rc"] != 0 or not lines:
        raise RunFailed(f"torch rc={result['rc']}: {' '.join(cmd)}\n{stdout[-2000:]}\n"
                        f"{stderr[-3000:]}")
    t = json.loads(lines[-1])
    result.update({
        "system": "pytorch",
        "transform": transform,
        "num_workers": num_workers,
        "batch_size": batch_size,
        "epochs": 1,
        "torch_report": t,
        "samples": t["samples"],
        "ips_after_first": t["images_per_second_after_first_batch"],
        "ips_with_startup": t["images_per_second_from_spawn"],
        "ttfb_seconds": t["first_batch_seconds_from_spawn"],
        "ttfb_from_script_seconds": t["first_batch_seconds_from_script"],
        "import_seconds": t["import_seconds"],
    })
    return result


def run_roofline(bins, data, threads=2, pss=False, timeout=300):
    cmd = [os.path.join(bins, "jpeg_roofline"), f"--data={data}", f"--threads={threads}"]
    result, stdout, stderr = _spawn_and_wait(cmd, timeout, pss)
    lines = [l for l in stdout.splitlines() if l.startswith("{")]
    if result["rc"] != 0 or not lines:
        raise RunFailed(f"roofline rc={result['rc']}: {' '.join(cmd)}\n{stderr[-2000:]}")
    r = json.loads(lines[-1])
    result.update({
        "system": "roofline",
        "transform": "full-decode",
        "num_workers": threads,
        "batch_size": None,
        "roofline": r,
        "samples": r["images"],
        "ips_after_first": r["images_per_second"],
        "ips_with_startup": r["images"] / result["wall_seconds"],
        "ttfb_seconds": None,
    })
    return result


def run_exec_probe(bins, repeats=5):
    """Median spawn→exit seconds of `flowloader stages` (exec + loading + exit)."""
    times = []
    for _ in range(repeats):
        t0 = time.time()
        subprocess.run([os.path.join(bins, "flowloader"), "stages"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=True)
        times.append(time.time() - t0)
    times.sort()
    return times[len(times) // 2]


def _proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_scrape_cost(bins, data, dataset_size, port, scrapes=300, timeout=120):
    """CPU flowloader spends serving one /metrics scrape, measured directly.

    Runs one epoch with --metrics_address and --linger_seconds, waits until the run is
    over (flowloader_samples_total reaches the dataset size, so the stage threads are
    idle), then GETs /metrics `scrapes` times back to back and reads the process's CPU
    before and after. Ends the run with SIGTERM (our own child, by its pid)."""
    cmd = [os.path.join(bins, "flowloader"), "run", f"--data={data}", "--epochs=1",
           "--device=cpu", "--progress=false", f"--metrics_address=127.0.0.1:{port}",
           f"--linger_seconds={timeout}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        deadline = time.time() + timeout
        body, total = b"", None
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    body = r.read()
            except OSError:
                time.sleep(0.05)
                continue
            for line in body.decode().splitlines():
                if line.startswith("flowloader_samples_total{"):
                    total = float(line.split()[-1])
            if total is not None and total >= dataset_size:
                break
            time.sleep(0.05)
        else:
            raise RunFailed("scrape-cost run never finished its epoch")
        time.sleep(0.3)  # Let the pipeline's threads settle.
        cpu0, t0 = _proc_cpu_seconds(proc.pid), time.time()
        for _ in range(scrapes):
            with urllib.request.urlopen(url, timeout=2) as r:
                body = r.read()
        cpu1, t1 = _proc_cpu_seconds(proc.pid), time.time()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return {
        "scrapes": scrapes,
        "bytes_per_scrape": len(body),
        "cpu_ms_per_scrape": 1e3 * (cpu1 - cpu0) / scrapes,
        "wall_ms_per_scrape": 1e3 * (t1 - t0) / scrapes,
    }
