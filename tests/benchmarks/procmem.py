# procmem.py: peak memory of a whole process tree, sampled from a thread.
#
# TreeSampler(root_pid).start() polls every `interval` seconds (default 20 ms): it finds
# the root and all its descendants (PyTorch DataLoader workers included) through
# /proc/PID/task/TID/children, sums their RSS (/proc/PID/statm, cheap) and, with
# pss=True, their PSS (/proc/PID/smaps_rollup: shared pages divided among the sharers,
# so forked workers are not double counted). It keeps the peak of the SUM over samples.
#
# Cost: statm is ~10 us per process; smaps_rollup walks the page tables and costs ~7 ms
# per PyTorch process (measured here), which on 2 cores would slow the system under test.
# So the timed runs use pss=False, and the benchmark takes PSS in separate, untimed runs.
#
# Thread-safety: the sampler thread writes the peaks; read them after stop().
import os
import threading
import time

_PAGE = os.sysconf("SC_PAGE_SIZE")


def _children(pid):
    """Direct children of `pid` (all its threads), or [] if it is gone."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids.extend(int(x) for x in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return kids


def process_tree(root):
    """The root pid and every descendant currently alive."""
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.append(pid)
        todo.extend(_children(pid))
    return seen


def _rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def _pss_bytes(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeSampler(threading.Thread):
    """Samples the summed RSS (and optionally PSS) of root_pid's tree until stop()."""

    def __init__(self, root_pid, interval=0.02, pss=False):
        super().__init__(daemon=True)
        self.root_pid = root_pid
        self.interval = interval
        self.pss = pss
        self.peak_rss = 0
        self.peak_pss = 0
        self.max_processes = 0
        self.samples = 0
        self._stop_event = threading.Event()

    def sample_once(self):
        pids = process_tree(self.root_pid)
        # A zombie root (exited, not yet reaped) has RSS 0; count only live processes.
        per_pid = [_rss_bytes(p) for p in pids]
        rss = sum(per_pid)
        if rss == 0:
            return
        self.samples += 1
        self.max_processes = max(self.max_processes, sum(1 for r in per_pid if r))
        self.peak_rss = max(self.peak_rss, rss)
        if self.pss:
            self.peak_pss = max(self.peak_pss, sum(_pss_bytes(p) for p in pids))

    def run(self):
        while not self._stop_event.is_set():
            t0 = time.monotonic()
            self.sample_once()
            self._stop_event.wait(max(0.0, self.interval - (time.monotonic() - t0)))

    def stop(self):
        self._stop_event.set()
        self.join()
        return self.result()

    def result(self):
        return {
            "peak_rss_bytes": self.peak_rss,
            "peak_pss_bytes": self.peak_pss if self.pss else None,
            "max_processes": self.max_processes,
            "memory_samples": self.samples,
            "memory_interval_seconds": self.interval,
        }
