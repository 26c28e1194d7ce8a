# prom.py: a real Prometheus server on loopback that scrapes flowloader during the
# benchmark's metrics-on runs, so the measured overhead includes serving real scrapes.
#
#   with Prometheus(target="127.0.0.1:9464") as prom:
#       ... run flowloader --metrics_address=127.0.0.1:9464 ...
#       prom.query('sum_over_time(up{job="flowloader"}[10m])')
#
# Debian's /usr/bin/prometheus, its own config and --storage.tsdb.path in a temp dir,
# scrape_interval 1s, web UI/API on an ephemeral loopback port; start() waits for
# /-/ready. Scrapes of a target that is not running simply record up=0.
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

PROMETHEUS = "/usr/bin/prometheus"


def free_port():
    """An ephemeral loopback port that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, target, binary=PROMETHEUS, scrape_interval="1s"):
        self.target = target
        self.binary = binary
        self.scrape_interval = scrape_interval
        self.dir = None
        self.proc = None
        self.port = None
        self.log_path = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self, ready_timeout=60):
        self.dir = tempfile.mkdtemp(prefix="flowloader-bench-prom-")
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(
                "global:\n"
                f"  scrape_interval: {self.scrape_interval}\n"
                f"  scrape_timeout: {self.scrape_interval}\n"
                f"  evaluation_interval: {self.scrape_interval}\n"
                "scrape_configs:\n"
                "  - job_name: flowloader\n"
                "    static_configs:\n"
                f"      - targets: ['{self.target}']\n")
        self.port = free_port()
        self.log_path = os.path.join(self.dir, "prometheus.log")
        log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(self.dir, 'data')}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.time() + ready_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited early, see {self.log_path}:\n" +
                                   open(self.log_path).read()[-2000:])
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready",
                                            timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError("prometheus did not become ready")

    def query(self, expr):
        """The result list of an instant query (the API's data.result)."""
        url = (f"http://127.0.0.1:{self.port}/api/v1/query?" +
               urllib.parse.urlencode({"query": expr}))
        with urllib.request.urlopen(url, timeout=5) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise RuntimeError(f"query {expr!r} failed: {body}")
        return body["data"]["result"]

    def scalar(self, expr, default=0.0):
        """The first value of an instant query as a float (default if empty)."""
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else default

    def cpu_seconds(self):
        """User+system CPU seconds the Prometheus process has used so far."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
