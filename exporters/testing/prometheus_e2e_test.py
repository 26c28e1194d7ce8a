#!/usr/bin/python3
"""prometheus_e2e_test: a real Prometheus scrapes a flowloader process and evaluates every
PromQL expression of the shipped dashboard and rules.

  1. starts the stats source (--server, default the synthetic fake_pipeline_server) on
     127.0.0.1:0 and reads its port from --port_file;
  2. starts /usr/bin/prometheus on 127.0.0.1 with its own TSDB in TEST_TMPDIR, a 1 s
     scrape and evaluation interval, and the shipped rules file;
  3. polls /-/ready, then /api/v1/query until every expression returns a non-empty vector
     whose series carry the labels their consumer reads (legend, annotation, by-clause),
     with pipeline = --pipeline for dashboard queries; alerts listed in --expect_alert must
     return the given label values; all rules must evaluate with health "ok"; panels named
     in --expect_zero, evaluated for a pipeline that never failed, must return series that
     are all 0 (a clean run shows 0, not "No data");
  4. kills both processes. Everything is bounded by --timeout seconds (default 60).

The stats source is replaceable: any binary taking --address, --port_file and
--run_seconds works. A real pipeline would not fire the alerts; pass no --expect_alert
and alert expressions then only have to evaluate without error.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promql_exprs  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True, help="stats source binary")
    p.add_argument("--server_arg", action="append", default=[], help="extra flag for it")
    p.add_argument("--pipeline", default="train", help="value for the $pipeline variable")
    p.add_argument("--expect_alert", action="append", default=[],
                   help="NAME or NAME:label=value,label=value; the alert expression must "
                        "return a series with those labels")
    p.add_argument("--expect_zero", action="append", default=[],
                   help="PIPELINE:TITLE_PREFIX; the panels whose title starts with "
                        "TITLE_PREFIX, for $pipeline = PIPELINE, must return only zeros")
    p.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
    p.add_argument("--timeout", type=float, default=60)
    return p.parse_args()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, deadline, fn, interval=0.2):
    """Calls fn until it returns a truthy value; fails the test at the deadline."""
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except (OSError, ValueError, urllib.error.URLError) as e:
            last_error = e
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last error: {last_error})")


class Prometheus:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def get(self, path, **params):
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode("utf-8")

    def query(self, expr):
        return json.loads(self.get("/api/v1/query", query=expr))


def ensure_running(proc, name):
    """Fails at once (instead of at the deadline) when a child process has exited."""
    if proc.poll() is not None:
        raise AssertionError(f"{name} exited early with status {proc.returncode}")


def parse_expectations(specs):
    out = {}
    for spec in specs:
        name, _, labels = spec.partition(":")
        out[name] = dict(kv.split("=", 1) for kv in labels.split(",") if kv)
    return out


def check(e, response, pipeline, expected_alerts):
    """Returns None when `response` satisfies expression `e`, else why not."""
    if response.get("status") != "success":
        return f"query failed: {response.get('error')}"
    data = response["data"]
    if data["resultType"] != "vector":
        return f"result type {data['resultType']}"
    series = [r["metric"] for r in data["result"]]
    must_return = e.kind != "alert" or e.name in expected_alerts
    if not must_return:
        return None
    if not series:
        return "empty result"
    for labels in series:
        missing = e.labels - set(labels)
        if missing:
            return f"series {labels} lacks {sorted(missing)}"
        if e.kind == "panel" and labels.get("pipeline", pipeline) != pipeline:
            return f"series {labels} is not pipeline {pipeline}"
    if e.kind == "variable" and not any(l.get("pipeline") == pipeline for l in series):
        return f"variable does not list pipeline {pipeline}"
    want = expected_alerts.get(e.name, {})
    if want and not any(all(l.get(k) == v for k, v in want.items()) for l in series):
        return f"no series with {want} in {series}"
    return None


def zero_queries(exprs, specs, variables):
    """{source: query} for each panel that --expect_zero names, with its pipeline."""
    out = {}
    for spec in specs:
        pipeline, _, prefix = spec.partition(":")
        panels = [e for e in exprs if e.kind == "panel" and e.name.startswith(prefix)]
        if not panels:
            raise AssertionError(f"--expect_zero={spec}: no panel title starts with {prefix!r}")
        for e in panels:
            query = promql_exprs.substitute(e.expr, dict(variables, pipeline=pipeline))
            out[f"{e.source} at 0 for {pipeline}"] = query
    return out


def check_zero(response):
    """Returns None when `response` is a non-empty vector of zeros, else why not."""
    if response.get("status") != "success":
        return f"query failed: {response.get('error')}"
    result = response["data"]["result"]
    if not result:
        return "empty result (the dashboard would show No data)"
    nonzero = [r for r in result if float(r["value"][1]) != 0]
    return f"non-zero series {nonzero}" if nonzero else None


def main():
    args = parse_args()
    start = time.monotonic()
    deadline = start + args.timeout
    tmp = os.environ.get("TEST_TMPDIR") or os.path.abspath("tmp-prometheus-e2e")
    os.makedirs(tmp, exist_ok=True)
    rules = os.path.abspath(promql_exprs.RULES)
    exprs = promql_exprs.all_exprs()
    expected_alerts = parse_expectations(args.expect_alert)
    variables = dict(promql_exprs.DEFAULT_VARIABLES, pipeline=args.pipeline)
    procs = []
    prom_log_path = os.path.join(tmp, "prometheus.log")
    try:
        port_file = os.path.join(tmp, "server.port")
        server = subprocess.Popen(
            [args.server, "--address=127.0.0.1:0", f"--port_file={port_file}",
             f"--run_seconds={int(args.timeout) + 30}"] + args.server_arg)
        procs.append(server)
        def read_port():
            ensure_running(server, "the stats source")
            return os.path.exists(port_file) and open(port_file).read().strip()

        server_port = int(wait_for("the stats source's port file", deadline, read_port))
        print(f"stats source on 127.0.0.1:{server_port}")

        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
scrape_configs:
  - job_name: flowloader
    static_configs:
      - targets: ["127.0.0.1:{server_port}"]
""")
        prom_port = free_port()
        prom_log = open(prom_log_path, "w")
        prom = subprocess.Popen(
            [args.prometheus, f"--config.file={config}",
             f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
            stdout=prom_log, stderr=subprocess.STDOUT)
        procs.append(prom)
        p = Prometheus(prom_port)
        def ready():
            ensure_running(prom, "prometheus")
            return "Ready" in p.get("/-/ready")

        wait_for("Prometheus /-/ready", deadline, ready)
        print(f"Prometheus ready after {time.monotonic() - start:.1f} s")
        wait_for("the first scrape", deadline,
                 lambda: p.query('up{job="flowloader"} == 1')["data"]["result"])
        print(f"first sample after {time.monotonic() - start:.1f} s")

        # source -> (query, checker of its response)
        pending = {e.source: (promql_exprs.substitute(e.expr, variables),
                              lambda r, e=e: check(e, r, args.pipeline, expected_alerts))
                   for e in exprs}
        zeros = zero_queries(exprs, args.expect_zero, variables)
        pending.update((source, (query, check_zero)) for source, query in zeros.items())
        total = len(pending)
        why = {}
        while pending and time.monotonic() < deadline:
            for source, (query, checker) in list(pending.items()):
                problem = checker(p.query(query))
                if problem is None:
                    print(f"ok  {source} ({time.monotonic() - start:.1f} s)")
                    del pending[source]
                else:
                    why[source] = problem
            if pending:
                ensure_running(server, "the stats source")
                time.sleep(0.5)
        if pending:
            for source, (query, _) in pending.items():
                print(f"FAIL {source}: {why[source]}\n     {query}")
            raise AssertionError(f"{len(pending)} of {total} expressions never passed")

        # Every rule evaluates cleanly in Prometheus' own rule manager too.
        unhealthy = []

        def rules_healthy():
            groups = json.loads(p.get("/api/v1/rules"))["data"]["groups"]
            unhealthy[:] = [(r["name"], r["health"], r.get("lastError")) for g in groups
                            for r in g["rules"] if r["health"] != "ok"]
            return bool(groups) and not unhealthy

        wait_for(f"every rule to report health ok ({unhealthy})", deadline, rules_healthy)
        active = set()

        def alerts_active():
            alerts = json.loads(p.get("/api/v1/alerts"))["data"]["alerts"]
            active.update(a["labels"]["alertname"] for a in alerts)
            return set(expected_alerts) <= active

        wait_for(f"alerts {sorted(expected_alerts)} to be pending or firing (active: {active})",
                 deadline, alerts_active)
        print(f"PASS: {len(exprs)} expressions, {len(zeros)} at 0 on a clean pipeline, "
              f"alerts active: {sorted(active)}, "
              f"{time.monotonic() - start:.1f} s")
    except Exception:
        if os.path.exists(prom_log_path):
            print("---- prometheus log ----\n" + open(prom_log_path).read()[-4000:])
        raise
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(procs):
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
