#!/usr/bin/python3
"""s3_bench.py: s3:// from a loopback Ceph RADOS Gateway against local disk and torch+boto3.

    /usr/bin/python3 tests/benchmarks/s3_bench.py --flowloader=PATH [--images=2000]
        [--reps=3] [--delay_ms=20] [--epochs=1] [--no_torch] [--ab] [--only=NAME,...]
        [--baseline=PATH]
        [--out=tests/benchmarks/results/s3.md]

On generated ImageNet-like JPEGs (`flowloader make-dataset`, 10 classes, cached in
.bench_data/), batch 64, 2 workers, every other flag at its default (train transform),
one epoch per run, it
  1. packs the ImageFolder into tar shards with `flowloader pack` (16 MB shards);
  2. starts the gateway (tests/testing/radosgw.sh) on 127.0.0.1 and uploads both with
     boto3 (s3://bench/train/... and s3://bench/shards/...);
  3. starts a delay proxy (a TCP relay in this file, DelayProxy) in front of the gateway
     that holds every chunk the client sends (a request) --delay_ms before passing it on,
     so every request costs a round trip of that much; answers pass straight back, with
     os.splice (no copy through Python: the proxy models latency, and its CPU must stay
     small beside the client's and the server's). Each run records how late the proxy
     sent the requests past --delay_ms (its p90 and max, ms: the column "proxy late");
  4. serves the same shards with Debian's nginx on 127.0.0.1 (shards_bench.py's config),
     directly and through a second delay proxy: today's http(s):// shards;
  5. runs, alternating, --reps rounds of: the ImageFolder on disk, the prefix from the
     gateway, the prefix through the proxy, the shards on disk, from the gateway, through
     the proxy, from nginx, through its proxy, and (unless --no_torch) torch DataLoader(num_workers=2) over a Dataset reading each object with
     boto3 (RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize);
  6. reports median images/s (after the first batch: flowloader's summary JSON; torch the
     same way from its own timestamps), the ratios and PASS/FAIL against the targets:
       prefix from the gateway >= 0.9x disk, shards >= 0.95x;
       through the proxy: prefix >= 0.8x disk, shards >= 0.9x;
       HTTP shards from nginx >= 0.95x disk, through its proxy >= 0.9x;
       flowloader prefix from the gateway >= 10x torch+boto3.
With --baseline=PATH (another flowloader binary, e.g. main's) every flowloader variant
also runs with it as NAME@base, right after NAME in each round, and the targets are
checked for both binaries: a change measured side by side on the same gateway and load.
Writes the Markdown table to --out (and prints it). The load average is recorded with
every run: other work on the same cores moves every figure.

The gateway shares the cores with the client, so its CPU per request bounds what any
client can reach: a disk run that keeps the cores busy for D CPU seconds, against a
gateway that needs G CPU seconds for the same epoch, leaves the s3:// run at most
D / (D + G) of the disk's rate (the ceiling row; the client's own extra CPU comes on top).
"""
import argparse
import concurrent.futures
import fcntl
import json
import os
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shards_bench import start_nginx  # noqa: E402  (nginx on 127.0.0.1, keep-alive, ranges)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RADOSGW = os.path.join(REPO, "tests", "testing", "radosgw.sh")
PYTHON = "/usr/bin/python3"  # Debian's torch 1.13, torchvision 0.14, boto3.
BUCKET = "bench"
BATCH = 64
WORKERS = 2
EPOCHS = 1  # --epochs


def log(msg):
    print(f"[s3_bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    log(" ".join(cmd))
    return subprocess.run(cmd, check=True, **kw)


# ---------------------------------------------------------------------------- data

def dataset(flowloader, images):
    """An ImageNet-like ImageFolder of `images` JPEGs in 10 classes, cached in .bench_data/."""
    per_class = max(1, images // 10)
    root = os.path.join(REPO, ".bench_data", f"imagenet_like_{per_class * 10}_c10_q90_n7.0_s0")
    if not os.path.isdir(root):
        os.makedirs(os.path.dirname(root), exist_ok=True)
        tmp = root + f".tmp{os.getpid()}"
        run([flowloader, "make-dataset", f"--out={tmp}", "--classes=10",
             f"--images_per_class={per_class}", "--min_short_side=256", "--max_short_side=512",
             "--quality=90", "--noise=7", "--seed=0"], stdout=subprocess.DEVNULL)
        os.rename(tmp, root)
    return root


def pack(flowloader, folder, out):
    """Packs `folder` into `out`; returns the brace pattern `pack` prints (e.g. train-{0..6}.tar)."""
    res = run([flowloader, "pack", f"--data={folder}", f"--out={out}", "--shard_size=16MB"],
              capture_output=True, text=True)
    return os.path.basename(res.stdout.strip().splitlines()[-1].split("--data=")[1].strip("'"))


def files_below(root):
    for dirpath, _, names in os.walk(root):
        for n in names:
            path = os.path.join(dirpath, n)
            yield path, os.path.relpath(path, root)


def upload(client, root, prefix):
    """Every file below `root` as s3://bench/PREFIX/RELATIVE_PATH (8 uploads in flight)."""
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        jobs = [pool.submit(client.upload_file, path, BUCKET, f"{prefix}/{rel}")
                for path, rel in files_below(root)]
        for j in jobs:
            j.result()
    log(f"uploaded {len(jobs)} files from {root} to s3://{BUCKET}/{prefix}/")


# ---------------------------------------------------------------------------- delay proxy

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's value; Python may lack it.

class DelayProxy:
    """A TCP relay on 127.0.0.1 that delays every client->server chunk by `delay` seconds.

    Each chunk the client writes (an HTTP request: flowloader's and boto3's are small and
    written at once) is passed on `delay` after it arrived, in order; the server's bytes
    pass back at once. .port is where it listens; .report() says what it added.

    It models network latency, so it must add `delay` and nothing else, and cost little
    CPU on the cores it shares with the client and the server: a relay that copies the
    answers through one Python thread (asyncio) spends ~0.1 s of CPU a shard epoch (a third
    of a disk epoch) and its loop's lag makes a "20 ms" round trip 26-40 ms. So each
    connection has two threads that block in the kernel, at nice -10: one reads the
    client's chunks and sends each `delay` after the kernel received it (SO_TIMESTAMPNS:
    a thread slow to start or to run does not lengthen the hold; its lateness past the due
    time is recorded), and one moves the server's bytes to the client with os.splice
    (socket -> pipe -> socket, no copy through Python). Measured at load 7: 0.07 s of CPU
    a shard epoch, requests late 0.1 ms at the median and 0.4-1.4 ms at p90
    (tests/benchmarks/results/s3.md).
    """

    def __init__(self, upstream_port, delay):
        self.upstream_port = upstream_port
        self.delay = delay
        self._late = []  # Seconds each chunk was sent past its due time.
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(512)
        self.port = self._listener.getsockname()[1]
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    @staticmethod
    def _favour():
        """Runs this thread at nice -10 (where allowed): a network's latency does not wait
        for the client's decode threads to yield a core, and the relay's CPU is small."""
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), -10)
        except OSError:
            pass

    def _accept(self):
        self._favour()
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(client,), daemon=True).start()

    def _connection(self, client):
        self._favour()
        try:
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        except OSError:
            client.close()
            return
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=self._answers, args=(upstream, client), daemon=True).start()
        self._requests(client, upstream)

    def _requests(self, client, upstream):
        """Client -> server: each chunk held until `delay` after the kernel received it.

        The due time is the kernel's arrival stamp (SO_TIMESTAMPNS, CLOCK_REALTIME), not
        when this thread got to the chunk: a thread slow to start or to run does not
        lengthen the hold, and a chunk read while an earlier one was held (a request in
        several writes) is due as early as it would have been. So one thread reads,
        holds and sends, in order; how late each went past its due time is recorded.
        """
        client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        try:
            while True:
                data, ancillary, _, _ = client.recvmsg(1 << 16, 64)
                if not data:
                    break
                arrived = time.time()
                for level, kind, value in ancillary:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= 16:
                        sec, nsec = struct.unpack("qq", value[:16])
                        arrived = sec + nsec / 1e9
                due = arrived + self.delay
                wait = due - time.time()
                if wait > 0:
                    time.sleep(wait)
                late = time.time() - due
                with self._lock:
                    self._late.append(late)
                upstream.sendall(data)
        except OSError:
            pass
        finally:
            try:
                upstream.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _answers(self, upstream, client):
        """Server -> client with os.splice, each read ACKed at once.

        The relay is a TCP endpoint of its own: with the kernel's delayed ACK, a server
        that writes its headers and body in two writes with Nagle on (radosgw does) holds
        the body until the relay ACKs the headers, 40 ms later, on every request (measured:
        GETs through a 20 ms relay took ~65 ms). TCP_QUICKACK after each read ACKs at
        once, as the client itself does (http_env.cc's AckNow), so the relay adds only its
        delay.
        """
        self._favour()
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ: 1 MiB a splice.
        except OSError:
            pass
        try:
            while True:
                n = os.splice(upstream.fileno(), w, 1 << 20)
                try:
                    upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
                except OSError:
                    pass
                if n == 0:
                    break
                while n > 0:
                    n -= os.splice(r, client.fileno(), n)
        except OSError:
            pass
        finally:
            os.close(r)
            os.close(w)
            for s in (client, upstream):  # shutdown wakes the thread reading the client.
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def report(self):
        """What the hold added past `delay` since the last report: chunks, p50/p90/max ms."""
        with self._lock:
            late, self._late = sorted(self._late), []
        if not late:
            return {"chunks": 0}
        pick = lambda q: round(1000 * late[min(len(late) - 1, int(q * len(late)))], 2)  # noqa
        return {"chunks": len(late), "late_p50_ms": pick(0.5), "late_p90_ms": pick(0.9),
                "late_max_ms": round(1000 * late[-1], 2)}

    def stop(self):
        self._stopped = True
        self._listener.close()


# ---------------------------------------------------------------------------- torch + boto3

def torch_boto3_main(argv):
    """Child process: one epoch of torch DataLoader over boto3 GETs; prints one JSON line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--prefix", required=True)
    a = ap.parse_args(argv)
    import io

    import boto3
    import torch
    from PIL import Image
    from torch.utils.data import DataLoader, Dataset
    from torchvision import transforms

    def client():
        return boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1")

    keys = []
    for page in client().get_paginator("list_objects_v2").paginate(Bucket=BUCKET,
                                                                    Prefix=a.prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    # As torchvision's ImageFolder: images one directory below the root (the class).
    keys = sorted(k for k in keys if "/" in k[len(a.prefix):]
                  and k.lower().endswith((".jpg", ".jpeg", ".png")))
    classes = sorted({k[len(a.prefix):].split("/")[0] for k in keys})
    label = {c: i for i, c in enumerate(classes)}
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    class S3Images(Dataset):
        """Each sample one GetObject; the client made lazily in each worker (not fork-safe)."""
        s3 = None

        def __len__(self):
            return len(keys)

        def __getitem__(self, i):
            if S3Images.s3 is None:
                S3Images.s3 = client()
            body = S3Images.s3.get_object(Bucket=BUCKET, Key=keys[i])["Body"].read()
            image = Image.open(io.BytesIO(body)).convert("RGB")
            return tf(image), label[keys[i][len(a.prefix):].split("/")[0]]

    def init(_):
        torch.set_num_threads(1)

    torch.manual_seed(0)
    loader = DataLoader(S3Images(), batch_size=BATCH, shuffle=True, num_workers=WORKERS,
                        worker_init_fn=init)
    t_start = time.time()
    t_first = None
    first_rows = samples = 0
    for images, _ in loader:
        samples += images.shape[0]
        if t_first is None:
            t_first, first_rows = time.time(), images.shape[0]
    t_end = time.time()
    print(json.dumps({"samples": samples,
                      "images_per_second": (samples - first_rows) / max(1e-9, t_end - t_first),
                      "first_batch_seconds": t_first - t_start}))


# ---------------------------------------------------------------------------- runs

def gateway_cpu_seconds(rgw):
    """CPU seconds (user + system) the gateway's processes (radosgw, OSD, monitor) used."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline") as f:
                if rgw not in f.read().replace("\0", " "):
                    continue
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def measured(fn, rgw, proxies=()):
    """fn's result with the CPU seconds its child process and the gateway used, and how
    late the delay proxies sent its requests past their delay."""
    def run_one(name):
        for p in proxies:
            p.report()  # Forget what earlier runs left.
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        self0 = resource.getrusage(resource.RUSAGE_SELF)
        g0 = gateway_cpu_seconds(rgw)
        r = fn(name)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self1 = resource.getrusage(resource.RUSAGE_SELF)
        r["client_cpu_seconds"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        r["gateway_cpu_seconds"] = gateway_cpu_seconds(rgw) - g0
        # This process's own CPU meanwhile: the delay proxies' relaying (threads that
        # block in the kernel), on the same cores as the client and the gateway.
        r["proxy_cpu_seconds"] = (self1.ru_utime - self0.ru_utime) + (self1.ru_stime - self0.ru_stime)
        reports = [rep for rep in (p.report() for p in proxies) if rep.get("chunks")]
        r["proxy_late"] = max(reports, key=lambda rep: rep["chunks"]) if reports else {}
        return r
    return run_one


def flowloader_run(flowloader, data, work, name, env, flags=()):
    summary = os.path.join(work, f"{name}.json")
    t0 = time.time()
    res = subprocess.run([flowloader, "run", f"--data={data}", f"--epochs={EPOCHS}",
                          f"--num_workers={WORKERS}", f"--batch_size={BATCH}", "--seed=0",
                          "--metrics_address=", "--noprogress", f"--summary_json={summary}",
                          *flags],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.time() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{name}: flowloader exited {res.returncode}: {res.stderr[-2000:]}")
    with open(summary) as f:
        s = json.load(f)
    # What autotune changed (read_ahead's floor for remote reads among them), in the log.
    for d in s.get("autotune", {}).get("decisions", []):
        log(f"{name}: autotune at {d['seconds']:.1f} s {d['knob']} {d['from']} -> {d['to']}: "
            f"{d['reason']}")
    return {"images_per_second": s["images_per_second"], "samples": s["samples"],
            "skipped": s["skipped"], "first_batch_seconds": s["first_batch_seconds"],
            "wall_seconds": wall, "requests": s.get("storage", {}).get("requests", 0),
            "retries": s.get("storage", {}).get("retries", 0),
            # The read-ahead's own account (limit, in flight, latency) and the shards'
            # block fetches: where a remote run's time went.
            "read_ahead": s.get("storage", {}).get("read_ahead", {}),
            # The workers' time in the read stage: reading, and waiting for reads.
            "read_busy_seconds": s.get("stages", {}).get("read", {}).get("busy_seconds", 0),
            "blocks": s.get("storage", {}).get("blocks", {})}


def torch_run(endpoint, env):
    t0 = time.time()
    res = subprocess.run([PYTHON, os.path.abspath(__file__), "--_torch_boto3",
                          f"--endpoint={endpoint}", "--prefix=train/"],
                         env=env, capture_output=True, text=True)
    wall = time.time() - t0
    if res.returncode != 0:
        raise RuntimeError(f"torch+boto3 exited {res.returncode}: {res.stderr[-2000:]}")
    r = json.loads(res.stdout.strip().splitlines()[-1])
    r.update(wall_seconds=wall, skipped=0, requests=r["samples"], retries=0, read_busy_seconds=0,
             read_ahead={})
    return r


def ceiling_lines(variants, med):
    """The ratio no client can beat on shared cores: disk CPU D / (D + gateway CPU G)."""
    names = {name for name, _ in variants}
    out = []
    for remote, disk in (("folder_s3", "folder_disk"), ("shards_s3", "shards_disk")):
        if remote not in names or disk not in names:
            continue
        d = med(disk, "client_cpu_seconds")[0]
        g = med(remote, "gateway_cpu_seconds")[0]
        c = med(remote, "client_cpu_seconds")[0]
        if not out:
            out += ["", "| ceiling on these cores | disk CPU D (s) | gateway CPU G (s) | "
                    "D / (D + G) | with this client's CPU C: D / (C + G) |", "|---|---|---|---|---|"]
        out.append(f"| {remote} / {disk} | {d:.1f} | {g:.1f} | {d / max(1e-9, d + g):.2f}x | "
                   f"{d / max(1e-9, c + g):.2f}x |")
    return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--_torch_boto3":
        return torch_boto3_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flowloader", required=True, help="the flowloader binary (-c opt build)")
    ap.add_argument("--images", type=int, default=2000, help="JPEGs in the set (10 classes)")
    ap.add_argument("--reps", type=int, default=3, help="alternating rounds; medians reported")
    ap.add_argument("--delay_ms", type=float, default=20.0, help="the proxy's delay per request")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "benchmarks", "results", "s3.md"))
    ap.add_argument("--note", default="", help="a line added to the results (e.g. the machine's state)")
    ap.add_argument("--epochs", type=int, default=1, help="epochs a run (images/s over all)")
    ap.add_argument("--no_torch", action="store_true", help="leave out torch+boto3 (slow)")
    ap.add_argument("--only", default="",
                    help="comma-separated variants to run (e.g. folder_disk,folder_s3); all if empty")
    ap.add_argument("--baseline", default="",
                    help="a second flowloader binary (e.g. main's): every flowloader variant also "
                         "runs with it as NAME@base, alternating in each round, and the targets "
                         "are reported for both")
    ap.add_argument("--ab", action="store_true",
                    help="also run the gateway variants with --read_ahead=0 (one GET in flight "
                         "per worker), alternating with the rest: read-ahead's A/B")
    ap.add_argument("--read_ahead_sweep", default="",
                    help="comma-separated fixed in-flight limits (e.g. 16,64,128): every remote "
                         "variant also runs with --read_ahead=N as NAME_raN (pick with --only), "
                         "against the default auto limit")
    args = ap.parse_args()
    global EPOCHS
    EPOCHS = args.epochs
    import boto3

    flowloader = os.path.abspath(args.flowloader)
    work = tempfile.mkdtemp(prefix="s3_bench.")
    folder = dataset(flowloader, args.images)
    shard_dir = os.path.join(work, "shards")
    pattern = pack(flowloader, folder, shard_dir)
    rgw = os.path.join(work, "rgw")
    run([RADOSGW, "start", rgw], stdout=subprocess.DEVNULL)
    proxy = nginx = nginx_proxy = None
    try:
        with open(os.path.join(rgw, "env")) as f:
            gw = dict(line.strip().split("=", 1) for line in f if "=" in line)
        env = dict(os.environ, AWS_ACCESS_KEY_ID=gw["RGW_ACCESS_KEY"],
                   AWS_SECRET_ACCESS_KEY=gw["RGW_SECRET_KEY"], AWS_DEFAULT_REGION="us-east-1",
                   HOME=work)  # No ~/.aws of the user's.
        for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
            env.pop(k, None)
        client = boto3.client("s3", endpoint_url=gw["RGW_ENDPOINT"], region_name="us-east-1",
                              aws_access_key_id=gw["RGW_ACCESS_KEY"],
                              aws_secret_access_key=gw["RGW_SECRET_KEY"])
        client.create_bucket(Bucket=BUCKET)
        upload(client, folder, "train")
        upload(client, shard_dir, "shards")
        proxy = DelayProxy(int(gw["RGW_PORT"]), args.delay_ms / 1000.0)
        direct = dict(env, AWS_ENDPOINT_URL=gw["RGW_ENDPOINT"])
        delayed = dict(env, AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.port}")
        local_shards = os.path.join(shard_dir, pattern)
        s3_prefix, s3_shards = f"s3://{BUCKET}/train/", f"s3://{BUCKET}/shards/{pattern}"
        fl = lambda data, e, *f, binary=flowloader: (lambda name: flowloader_run(binary, data, work, name, e, f))  # noqa
        nginx, nginx_port = start_nginx(shard_dir, os.path.join(work, "nginx"))
        nginx_proxy = DelayProxy(nginx_port, args.delay_ms / 1000.0)
        http_shards = f"http://127.0.0.1:{nginx_port}/{pattern}"
        http_shards_delay = f"http://127.0.0.1:{nginx_proxy.port}/{pattern}"
        specs = {  # name: (data, env, *flags) of each flowloader variant
            "folder_disk": (folder, env), "folder_s3": (s3_prefix, direct),
            "folder_s3_delay": (s3_prefix, delayed), "shards_disk": (local_shards, env),
            "shards_s3": (s3_shards, direct), "shards_s3_delay": (s3_shards, delayed),
            "shards_http": (http_shards, env), "shards_http_delay": (http_shards_delay, env),
        }
        # --read_ahead_sweep: every remote variant again with a fixed --read_ahead=N.
        remote = ["folder_s3", "folder_s3_delay", "shards_s3", "shards_s3_delay",
                  "shards_http", "shards_http_delay"]
        sweep = [(n, remote) for n in
                 (int(v) for v in args.read_ahead_sweep.split(",") if v.strip())]
        if args.ab and 0 not in [n for n, _ in sweep]:  # The gateway rows without read-ahead.
            sweep.insert(0, (0, ["folder_s3", "shards_s3"]))
        for n, names in sweep:
            for name in names:
                specs[f"{name}_ra{n}"] = (*specs[name], f"--read_ahead={n}")
        variants = [
            ("folder_disk", fl(folder, env)),
            ("folder_s3", fl(s3_prefix, direct)),
            ("folder_s3_delay", fl(s3_prefix, delayed)),
            ("shards_disk", fl(local_shards, env)),
            ("shards_s3", fl(s3_shards, direct)),
            ("shards_s3_delay", fl(s3_shards, delayed)),
            ("shards_http", fl(http_shards, env)),
            ("shards_http_delay", fl(http_shards_delay, env)),
            ("torch_boto3_s3", lambda name: torch_run(gw["RGW_ENDPOINT"], direct)),
        ]
        if args.no_torch:
            variants = [v for v in variants if not v[0].startswith("torch")]
        for n, names in sweep:
            variants += [(f"{name}_ra{n}", fl(*specs[f"{name}_ra{n}"])) for name in names]
        if args.baseline:  # Each flowloader variant, then the same with the baseline binary.
            base = os.path.abspath(args.baseline)
            paired = []
            for name, fn in variants:
                paired.append((name, fn))
                spec = specs.get(name)
                if spec is not None:
                    paired.append((name + "@base", fl(*spec, binary=base)))
            variants = paired
        if args.only:
            only = set(args.only.split(","))
            only |= {n + "@base" for n in only}
            unknown = {n for n in only if not n.endswith("@base")} - {name for name, _ in variants}
            if unknown:
                raise SystemExit(f"--only: no variant named {', '.join(sorted(unknown))}")
            variants = [v for v in variants if v[0] in only]
        variants = [(name, measured(fn, rgw, (proxy, nginx_proxy))) for name, fn in variants]
        for name, fn in variants:  # Warm-up: page cache, the gateway's caches.
            if not name.startswith("torch"):
                fn(name)
        runs = []
        for rep in range(args.reps):
            for name, fn in variants:
                r = dict(fn(name), variant=name, round=rep, loadavg_1m=os.getloadavg()[0])
                runs.append(r)
                log(f"{name} round {rep}: {r['images_per_second']:.1f} img/s, first batch "
                    f"{r['first_batch_seconds']:.2f} s, {r['samples']} samples, "
                    f"{r['skipped']} skipped, load {r['loadavg_1m']:.2f}")
    finally:
        if proxy:
            proxy.stop()
        if nginx_proxy:
            nginx_proxy.stop()
        if nginx:
            nginx.terminate()
            nginx.wait(10)
        subprocess.run([RADOSGW, "stop", rgw], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    def med(name, key="images_per_second"):
        vals = [r[key] for r in runs if r["variant"] == name]
        return statistics.median(vals), min(vals), max(vals)

    ips = {name: med(name)[0] for name, _ in variants}
    d = f"{args.delay_ms:g} ms"
    targets = [
        ("ImageFolder prefix from the gateway / disk", "folder_s3", "folder_disk", 0.9),
        ("tar shards from the gateway / disk", "shards_s3", "shards_disk", 0.95),
        (f"ImageFolder prefix through the {d} proxy / disk", "folder_s3_delay", "folder_disk", 0.8),
        (f"tar shards through the {d} proxy / disk", "shards_s3_delay", "shards_disk", 0.9),
        ("HTTP tar shards from nginx / disk", "shards_http", "shards_disk", 0.95),
        (f"HTTP tar shards through the {d} proxy / disk", "shards_http_delay", "shards_disk", 0.9),
        ("flowloader prefix from the gateway / torch+boto3", "folder_s3", "torch_boto3_s3", 10.0),
    ]
    targets += [(f"{text} (baseline binary)", num + "@base", den + "@base", need)
                for text, num, den, need in targets]
    targets = [t for t in targets if t[1] in ips and t[2] in ips]
    images = runs[0]["samples"]
    loads = [r["loadavg_1m"] for r in runs]
    lines = [
        f"# s3:// from a loopback RADOS Gateway ({time.strftime('%Y-%m-%d %H:%M')})", "",
        f"`/usr/bin/python3 tests/benchmarks/s3_bench.py --flowloader=PATH --images={args.images}"
        f" --reps={args.reps} --delay_ms={args.delay_ms:g} --epochs={args.epochs}"
        f"{' --no_torch' if args.no_torch else ''}{' --ab' if args.ab else ''}"
        f"{' --read_ahead_sweep=' + args.read_ahead_sweep if args.read_ahead_sweep else ''}"
        f"{' --baseline=PATH' if args.baseline else ''}"
        f"{' --only=' + args.only if args.only else ''}`: {images // args.epochs} ImageNet-like JPEGs "
        f"(10 classes, short side 256-512, q90), batch {BATCH}, {WORKERS} workers, default flags "
        f"(train transform), {args.epochs} epoch(s) a run; shards from `flowloader pack --shard_size=16MB`; "
        f"medians (min-max) of {args.reps} alternating rounds; images/s after the first batch.",
        "", f"Load average (1 min) over the runs: {min(loads):.2f}-{max(loads):.2f} "
        f"({os.cpu_count()} cores)." + (f" {args.note}" if args.note else ""), "",
        "Client CPU: the run's process (flowloader, or torch's main process and workers); "
        "gateway CPU: radosgw, the OSD and the monitor, on the same cores; proxy CPU: this "
        "script's delay proxies; proxy late: how long past --delay_ms the proxy sent a "
        "request, p90 / max ms of the run's (median over the rounds); read busy: the workers' seconds in the read stage "
        "(reading and waiting for reads); in flight: read-ahead's adaptive limit at the end "
        "(the highest it went) and the reads in flight on average while any was (the summary "
        "JSON's storage.read_ahead).", "",
        "| data | images/s | first batch (s) | read busy (s) | requests | client CPU (s) "
        "| gateway CPU (s) | gateway ms/request | proxy CPU (s) | proxy late (ms) | "
        "in flight: limit (peak) | mean in flight | skipped |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, _ in variants:
        m, lo, hi = med(name)
        requests = med(name, 'requests')[0]
        gateway = med(name, 'gateway_cpu_seconds')[0]
        per_request = f"{1000 * gateway / requests:.2f}" if requests else "-"
        ra = [r.get("read_ahead") or {} for r in runs if r["variant"] == name]
        in_flight = mean_in_flight = "-"
        if any(ra):
            in_flight = (f"{statistics.median(a.get('limit', 0) for a in ra):.0f} "
                         f"({statistics.median(a.get('peak_limit', a.get('limit', 0)) for a in ra):.0f})")
            mean_in_flight = f"{statistics.median(a.get('mean_in_flight', 0) for a in ra):.1f}"
        late = [r.get("proxy_late") or {} for r in runs if r["variant"] == name]
        late = [x for x in late if x.get("chunks")]
        proxy_late = (f"{statistics.median(x['late_p90_ms'] for x in late):.1f} / "
                      f"{statistics.median(x['late_max_ms'] for x in late):.1f}") if late else "-"
        lines.append(f"| {name} | {m:.1f} ({lo:.1f}-{hi:.1f}) | "
                     f"{med(name, 'first_batch_seconds')[0]:.2f} | "
                     f"{med(name, 'read_busy_seconds')[0]:.2f} | "
                     f"{requests:.0f} | {med(name, 'client_cpu_seconds')[0]:.1f} | "
                     f"{gateway:.1f} | {per_request} | {med(name, 'proxy_cpu_seconds')[0]:.2f} | "
                     f"{proxy_late} | {in_flight} | {mean_in_flight} | {med(name, 'skipped')[0]:.0f} |")
    lines += ceiling_lines(variants, med)
    lines += ["", "| target | ratio | needed | result |", "|---|---|---|---|"]
    passed = True
    for text, num, den, need in targets:
        ratio = ips[num] / max(1e-9, ips[den])
        if not num.endswith("@base"):  # The exit status judges the binary under test.
            passed &= ratio >= need
        lines.append(f"| {text} | {ratio:.2f}x | >= {need:g}x | {'PASS' if ratio >= need else 'FAIL'} |")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
