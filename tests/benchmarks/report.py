# report.py: turns the benchmark's raw runs into medians, ratios, target checks and
# sanity checks (build), and renders them as markdown (markdown, curve_markdown).
#
# Conventions:
#  * "after 1st batch" = rows after the first batch / time from first batch to last:
#    the steady rate. "incl. startup" = all rows / time from process spawn to last batch.
#  * Ratios use medians over reps; the metrics overhead uses the median of per-round
#    paired ratios (on / off, adjacent runs), which cancels slow drift in machine load.
#    The flowloader / PyTorch ratios are also listed round by round (context only).
#  * Targets are the issue's: printed PASS / FAIL with the shortfall, never adjusted.
import math
import statistics

TRAIN, EVAL = "flowloader train w2", "flowloader eval w2"
PT_TRAIN, PT_EVAL = "pytorch train w2", "pytorch eval w2"
TRAIN_3EP, EVAL_3EP = "flowloader train w2 x3ep", "flowloader eval w2 x3ep"
MIB = 2**20
NOISY = 0.10  # A run is "noisy" when other processes used more than this share of the cores.


def _median(values):
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return statistics.median(values) if values else None


def summarize(runs):
    """Per label: medians (and range) of the figures the report prints."""
    by_label = {}
    for r in runs:
        by_label.setdefault(r["label"], []).append(r)
    out = {}
    for label, all_rs in by_label.items():
        # Medians over the quiet runs; over all runs (flagged noisy_only) if none was quiet.
        quiet = [r for r in all_rs if r["foreign_cpu_share"] <= NOISY]
        rs = quiet or all_rs
        ips = [r["ips_after_first"] for r in rs]
        out[label] = {
            "runs": len(all_rs),
            "runs_used": len(rs),
            "noisy_only": not quiet,
            "system": rs[0]["system"],
            "ips_after_first": _median(ips),
            "ips_after_first_min": min(ips),
            "ips_after_first_max": max(ips),
            "ips_with_startup": _median([r["ips_with_startup"] for r in rs]),
            "ips_reported": _median([r.get("ips_reported") for r in rs]),
            "ips_later_epochs": _median([r.get("ips_later_epochs") for r in rs]),
            "ttfb_seconds": _median([r.get("ttfb_seconds") for r in rs]),
            "ttfb_from_spawn_seconds": _median(
                [r.get("ttfb_from_spawn_est_seconds", r.get("ttfb_seconds")) for r in rs]),
            "ttfb_from_script_seconds": _median([r.get("ttfb_from_script_seconds") for r in rs]),
            "import_seconds": _median([r.get("import_seconds") for r in rs]),
            "cpu_ms_per_image": _median([1e3 * r["cpu_seconds"] / max(1, r["samples"])
                                         for r in rs]),
            "peak_rss_mib": _median([r["peak_rss_bytes"] / MIB for r in rs]),
            "max_processes": max(r["max_processes"] for r in all_rs),
            "foreign_cpu_share": _median([r["foreign_cpu_share"] for r in rs]),
            "noisy_runs": sum(1 for r in all_rs if r["foreign_cpu_share"] > NOISY),
            "loadavg_1m": _median([r["loadavg_1m_before"] for r in rs]),
            "samples": rs[0]["samples"],
        }
    return out


def _ratio(a, b):
    return a / b if a is not None and b else None


def _round_ratios(runs, a, b, key):
    """a / b of `key` round by round (the two runs of a round are adjacent in time), for
    the rounds where both ran; their spread is the machine's run-to-run noise."""
    by_rep = {}
    for r in runs:
        if r.get("rep") is not None and r["label"] in (a, b) and r.get(key):
            by_rep.setdefault(r["rep"], {})[r["label"]] = r[key]
    return [v[a] / v[b] for _, v in sorted(by_rep.items()) if a in v and b in v]


def _ratios_text(ratios):
    if not ratios:
        return "–"
    return (", ".join(f"{x:.2f}x" for x in ratios) +
            f" (median {statistics.median(ratios):.2f}x)")


def _target(name, value, op, target, unit="", note="", noisy=False):
    ok = None
    if value is not None:
        ok = value >= target if op == ">=" else value <= target if op == "<=" else value < target
    return {"metric": name, "value": value, "op": op, "target": target, "unit": unit,
            "pass": ok, "note": note, "noisy": noisy}


def median_run(runs, label):
    """The run with the median images/s among the label's quiet runs (or all)."""
    rs = [r for r in runs if r["label"] == label]
    rs = [r for r in rs if r["foreign_cpu_share"] <= NOISY] or rs
    rs.sort(key=lambda r: r["ips_after_first"])
    return rs[len(rs) // 2] if rs else None


def stage_breakdown(run):
    """The flowloader summary's stage table for one run, with sums and the bottleneck."""
    if not run:
        return None
    s = run["summary"]
    per_sample = [n for n in ("read", "decode", "augment") if n in s["stages"]]
    return {
        "label": run["label"],
        "seconds": s["seconds"],
        "bottleneck": s.get("bottleneck"),
        "consumer_wait_share": s["consumer_wait_seconds"] / s["seconds"] if s["seconds"] else None,
        "stages": s["stages"],
        "per_sample_utilization_sum": sum(s["stages"][n]["utilization"] for n in per_sample),
        "cpu_share_of_workers": run["cpu_seconds"] / (s["seconds"] * run["num_workers"]),
        "advice": s.get("diagnosis", {}).get("advice"),
    }


def sanity_checks(runs, memory_runs, dataset_size, batch_size_default, prometheus, quality):
    issues = []
    for r in runs + memory_runs:
        label = r["label"]
        expected = dataset_size * r.get("epochs", 1)
        if r["samples"] != expected:
            issues.append(f"{label} (rep {r.get('rep')}): {r['samples']} samples, expected "
                          f"{expected}")
        if r["system"] == "flowloader":
            s = r["summary"]
            if s.get("skipped") or s.get("errors"):
                issues.append(f"{label}: skipped={s.get('skipped')} errors={s.get('errors')}")
            bs = r["batch_size"]
            want_batches = math.ceil(dataset_size / bs) * r["epochs"]
            if s["batches"] != want_batches:
                issues.append(f"{label}: {s['batches']} batches, expected {want_batches}")
            for name, st in s["stages"].items():
                per_batch = name in ("collate", "upload")
                want = want_batches if per_batch else expected
                if st["items"] != want:
                    issues.append(f"{label}: stage {name} items {st['items']}, expected {want}")
                if st["utilization"] > 1.02:
                    issues.append(f"{label}: stage {name} utilization "
                                  f"{st['utilization']:.2f} > 1")
        if r["system"] == "roofline" and r["roofline"]["errors"]:
            issues.append(f"{label}: {r['roofline']['errors']} decode errors")
    if prometheus.get("enabled"):
        on_runs = [r for r in runs if r.get("metrics")]
        if not prometheus.get("scrapes_ok"):
            issues.append("prometheus: no successful scrape of flowloader during metrics-on runs")
        elif on_runs and prometheus["scrapes_ok"] < 0.5 * prometheus.get("metrics_on_wall_seconds", 0):
            issues.append(f"prometheus: only {prometheus['scrapes_ok']:.0f} successful scrapes "
                          f"in {prometheus['metrics_on_wall_seconds']:.0f} s of metrics-on runs")
    if quality and quality["images"] == 0:
        issues.append("quality: no images compared")
    return issues


def curve_table(curve_runs):
    rows = {}
    for label, s in summarize(curve_runs).items():
        # "curve flowloader train w2 b64"
        _, system, transform, w, b = label.split()
        rows.setdefault((system, transform, int(b[1:])), {})[int(w[1:])] = s
    return [{"system": k[0], "transform": k[1], "batch_size": k[2],
             "by_workers": {w: {"ips_after_first": s["ips_after_first"],
                                "ips_with_startup": s["ips_with_startup"], "runs": s["runs"],
                                "noisy_runs": s["noisy_runs"]}
                            for w, s in sorted(v.items())}}
            for k, v in sorted(rows.items())]


def build(facts, dataset, data_root, runs, memory_runs, quality, prometheus, curve_runs, args,
          discarded_runs=()):
    s = summarize(runs)
    mem = {r["label"].replace(" [pss]", ""): {
        "peak_pss_mib": r["peak_pss_bytes"] / MIB if r["peak_pss_bytes"] else None,
        "peak_rss_mib": r["peak_rss_bytes"] / MIB,
        "max_processes": r["max_processes"],
        "memory_samples": r["memory_samples"]} for r in memory_runs}
    g = lambda label, key: s.get(label, {}).get(key)  # noqa: E731

    # Metrics overhead: per round (off, on, on, off), 1 - mean(on) / mean(off) of the long
    # runs' images/s; the median over rounds.
    # The CPU form, (CPU s per image on) / (off) - 1, is far less sensitive to other
    # processes than images/s is, and says what the exporter costs in cores.
    paired, quiet_paired, cpu_paired = [], [], []
    for rep in sorted({r["rep"] for r in runs if "rep" in r}):
        group = [r for r in runs if r.get("rep") == rep and " metrics " in r["label"]]
        off = [r for r in group if "metrics off" in r["label"]]
        on = [r for r in group if "metrics on" in r["label"]]
        if off and on:
            ips = lambda rs: statistics.mean(r["ips_reported"] for r in rs)  # noqa: E731
            cpu = lambda rs: statistics.mean(r["cpu_seconds"] / r["samples"] for r in rs)  # noqa: E731
            paired.append(1 - ips(on) / ips(off))
            cpu_paired.append(cpu(on) / cpu(off) - 1)
            if all(r["foreign_cpu_share"] <= NOISY for r in group):
                quiet_paired.append(paired[-1])
    metrics_overhead = _median(quiet_paired or paired)
    metrics_cpu_overhead = _median(cpu_paired)

    pss = lambda label: mem.get(label, {}).get("peak_pss_mib")  # noqa: E731
    # noisy(labels...): a figure is noisy data when a variant it uses had no quiet run.
    noisy = lambda *labels: any(s.get(l, {}).get("noisy_only", True) for l in labels)  # noqa: E731

    def ratio_target(name, a, b, key, op, target):
        return _target(name, _ratio(g(a, key), g(b, key)), op, target, "x", noisy=noisy(a, b))

    A, S = "ips_after_first", "ips_with_startup"
    targets = [
        ratio_target("flowloader / PyTorch, train (img/s after 1st batch)", TRAIN, PT_TRAIN, A, ">=", 6),
        ratio_target("flowloader / PyTorch, eval (img/s after 1st batch)", EVAL, PT_EVAL, A, ">=", 6),
        _target("flowloader epochs 2-3 / PyTorch, train (warm seek indexes; PyTorch after "
                "its 1st batch)", _ratio(g(TRAIN_3EP, "ips_later_epochs"), g(PT_TRAIN, A)),
                ">=", 6, "x", noisy=noisy(TRAIN_3EP, PT_TRAIN)),
        _target("flowloader epochs 2-3 / PyTorch, eval (warm seek indexes; PyTorch after "
                "its 1st batch)", _ratio(g(EVAL_3EP, "ips_later_epochs"), g(PT_EVAL, A)),
                ">=", 6, "x", noisy=noisy(EVAL_3EP, PT_EVAL)),
        ratio_target("flowloader / PyTorch, train (incl. startup)", TRAIN, PT_TRAIN, S, ">=", 6),
        ratio_target("flowloader / PyTorch, eval (incl. startup)", EVAL, PT_EVAL, S, ">=", 6),
        ratio_target("flowloader train / roofline (2 threads)", TRAIN, "roofline t2", A, ">=", 0.85),
        ratio_target("flowloader eval / roofline (2 threads)", EVAL, "roofline t2", A, ">=", 0.85),
        ratio_target("flowloader train, workers 2 / workers 1", TRAIN, "flowloader train w1", A,
                     ">=", 1.8),
        ratio_target("flowloader eval, workers 2 / workers 1", EVAL, "flowloader eval w1", A,
                     ">=", 1.8),
        _target("flowloader train time to first batch (from main)",
                g(TRAIN, "ttfb_seconds"), "<=", 0.3, "s", noisy=noisy(TRAIN)),
        _target("flowloader eval time to first batch (from main)",
                g(EVAL, "ttfb_seconds"), "<=", 0.3, "s", noisy=noisy(EVAL)),
        _target("flowloader train time to first batch (from spawn, est.)",
                g(TRAIN, "ttfb_from_spawn_seconds"), "<=", 0.3, "s",
                "main() time + exec probe", noisy=noisy(TRAIN)),
        # Peak memory does not depend on speed: the PSS runs are not noise-flagged.
        _target("peak PSS flowloader / PyTorch, train", _ratio(pss(TRAIN), pss(PT_TRAIN)),
                "<=", 1 / 3, "x"),
        _target("peak PSS flowloader / PyTorch, eval", _ratio(pss(EVAL), pss(PT_EVAL)),
                "<=", 1 / 3, "x"),
        _target("peak PSS flowloader 3 epochs (seek indexes grown) / PyTorch, train",
                _ratio(pss(TRAIN_3EP), pss(PT_TRAIN)), "<=", 1 / 3, "x"),
        _target("metrics overhead (Prometheus scraping at 1 s)", metrics_overhead, "<", 0.02, "",
                "median over rounds of 1 - mean(on)/mean(off), runs ordered off-on-on-off",
                noisy=not quiet_paired),
        _target("metrics overhead in CPU per image (same runs)", metrics_cpu_overhead, "<", 0.02,
                "", "median over rounds of cpu/img on / off - 1"),
        _target("eval output PSNR vs torchvision, mean", quality.get("psnr_mean_db"),
                ">=", 30, "dB"),
        _target("eval output PSNR vs torchvision, min", quality.get("psnr_min_db"),
                ">=", 30, "dB"),
    ]
    context = {
        "roofline / PyTorch train (what a loader that only decoded fully would get)":
            _ratio(g("roofline t2", "ips_after_first"), g(PT_TRAIN, "ips_after_first")),
        "roofline / PyTorch eval":
            _ratio(g("roofline t2", "ips_after_first"), g(PT_EVAL, "ips_after_first")),
        "roofline t2 / t1 (the machine's own 2-thread scaling)":
            _ratio(g("roofline t2", "ips_after_first"), g("roofline t1", "ips_after_first")),
        "PyTorch train time to first batch (from spawn), s": g(PT_TRAIN, "ttfb_seconds"),
        "PyTorch eval time to first batch (from spawn), s": g(PT_EVAL, "ttfb_seconds"),
        "PyTorch `import torch, torchvision`, s": g(PT_TRAIN, "import_seconds"),
        "flowloader / PyTorch, train, round by round (after 1st batch)":
            _ratios_text(_round_ratios(runs, TRAIN, PT_TRAIN, A)),
        "flowloader / PyTorch, eval, round by round (after 1st batch)":
            _ratios_text(_round_ratios(runs, EVAL, PT_EVAL, A)),
        "metrics overhead per round": paired,
        "metrics overhead rounds with all four runs quiet": len(quiet_paired),
        "metrics CPU-per-image overhead per round": cpu_paired,
    }
    doc = {
        "facts": facts,
        "dataset": dataset,
        "data_root": data_root,
        "args": args,
        "summary": s,
        "memory": mem,
        "targets": targets,
        "context": context,
        "stages": {TRAIN: stage_breakdown(median_run(runs, TRAIN)),
                   EVAL: stage_breakdown(median_run(runs, EVAL)),
                   "flowloader train w1": stage_breakdown(median_run(runs, "flowloader train w1")),
                   "flowloader eval w1": stage_breakdown(median_run(runs, "flowloader eval w1"))},
        "prometheus": prometheus,
        "quality": quality,
        "checks": sanity_checks(runs + list(curve_runs or []), memory_runs, dataset["images"],
                                64, prometheus, quality),
        "curve": curve_table(curve_runs) if curve_runs else None,
        "runs": runs,
        "memory_runs": memory_runs,
        "discarded_noisy_runs": list(discarded_runs),
    }
    return doc


# ---------------------------------------------------------------------------- markdown

def _f(v, fmt="{:.0f}", none="–"):
    return none if v is None else fmt.format(v)


def _value(t):
    v = t["value"]
    if v is None:
        return "–"
    if t["unit"] == "x":
        return f"{v:.3f}×" if t["target"] < 1 else f"{v:.2f}×"
    if t["unit"] == "s":
        return f"{v:.3f} s"
    if t["unit"] == "dB":
        return f"{v:.1f} dB"
    return f"{v:+.1%}"


def _target_text(t):
    if t["unit"] == "x":
        return f"{t['op']} {t['target']:.3f}×" if t["target"] < 1 else f"{t['op']} {t['target']:.2f}×"
    if t["unit"] == "":
        return f"{t['op']} {t['target']:.0%}"
    return f"{t['op']} {t['target']:g} {t['unit']}"


def _verdict(t):
    suffix = " (noisy data: no quiet run)" if t.get("noisy") else ""
    return _verdict_core(t) + suffix


def _verdict_core(t):
    if t["pass"] is None:
        return "n/a"
    if t["pass"]:
        return "PASS"
    v, target = t["value"], t["target"]
    if t["op"] == ">=":
        return f"FAIL ({v / target:.1%} of target)"
    return f"FAIL ({v / target:.2f}× the limit)" if target else "FAIL"


def markdown(doc):
    f, ds, s = doc["facts"], doc["dataset"], doc["summary"]
    a = doc["args"]
    out = []
    w = out.append
    w("# flowloader side-by-side benchmark\n")
    w(f"{f['date']} · {f['nproc']} cores ({f['cpu_model']}), {f['mem_total_gib']} GiB · "
      f"load average at start {', '.join(f'{x:.2f}' for x in f['loadavg_start'])}, at end "
      f"{', '.join(f'{x:.2f}' for x in f['loadavg_end'])} · kernel {f['kernel']} · commit "
      f"{f['git_commit']} (+{f['git_dirty_files']} uncommitted files) · torch {f['torch']}, "
      f"torchvision {f['torchvision']} · {f.get('build', '')}\n")
    w(f"Dataset: {ds['images']} JPEGs in {ds['classes']} class folders, {ds['total_mb']} MB; "
      f"file size KB min {ds['kb']['min']} / p10 {ds['kb']['p10']} / median "
      f"{ds['kb']['median']} / p90 {ds['kb']['p90']} / max {ds['kb']['max']} "
      f"({ds['share_40_80kb']:.0%} within 40–80 KB); shorter side "
      f"{ds['short_side']['min']}–{ds['short_side']['max']} px (median "
      f"{ds['short_side']['median']:.0f}), median {ds['median_megapixels']} Mpx. "
      f"batch 64, num_workers 2 unless stated, {a['reps']} rounds run in alternation; "
      f"medians (min–max) over the quiet runs (foreign CPU ≤ {NOISY:.0%}), over all runs "
      f"where none was quiet (marked NOISY ONLY).\n")

    w("## Throughput, latency, memory\n")
    w("| variant | img/s after 1st batch | img/s epochs 2+ | img/s incl. startup | "
      "1st batch from spawn | CPU ms/img | peak RSS sum | peak PSS sum | procs | "
      "foreign CPU (noisy runs) |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, r in s.items():
        m = doc["memory"].get(label, {})
        w(f"| {label} | {r['ips_after_first']:.0f} ({r['ips_after_first_min']:.0f}–"
          f"{r['ips_after_first_max']:.0f}) | {_f(r.get('ips_later_epochs'))} | "
          f"{_f(r['ips_with_startup'])} | "
          f"{_f(r['ttfb_from_spawn_seconds'], '{:.3f} s')} | "
          f"{_f(r['cpu_ms_per_image'], '{:.2f}')} | "
          f"{_f(m.get('peak_rss_mib', r['peak_rss_mib']), '{:.0f} MiB')} | "
          f"{_f(m.get('peak_pss_mib'), '{:.0f} MiB')} | {r['max_processes']} | "
          f"{r['foreign_cpu_share']:.0%} ({r['noisy_runs']}/{r['runs']})"
          f"{' NOISY ONLY' if r['noisy_only'] else ''} |")
    w("")
    w("## Targets (2 cores, batch 64, workers 2)\n")
    w("| metric | value | target | result |")
    w("|---|---:|---:|---|")
    for t in doc["targets"]:
        note = f" ({t['note']})" if t["note"] else ""
        w(f"| {t['metric']}{note} | {_value(t)} | {_target_text(t)} | {_verdict(t)} |")
    w("")
    c = doc["context"]
    w("Context: " + "; ".join(
        f"{k} = {v if isinstance(v, (str, int)) else _f(v, '{:.2f}') if not isinstance(v, list) else ', '.join(f'{x:+.1%}' for x in v)}"
        for k, v in c.items()) + ".\n")

    w("## flowloader stages (median run)\n")
    for label, b in doc["stages"].items():
        if not b:
            continue
        w(f"**{label}**: bottleneck `{b['bottleneck']}`, consumer waited "
          f"{b['consumer_wait_share']:.0%} of {b['seconds']:.2f} s; read+decode+augment "
          f"utilization sum {b['per_sample_utilization_sum']:.0%} of the workers; process CPU "
          f"{b['cpu_share_of_workers']:.0%} of num_workers cores.\n")
        w("| stage | items | busy s | utilization | concurrency |")
        w("|---|---:|---:|---:|---:|")
        for name, st in b["stages"].items():
            w(f"| {name} | {st['items']} | {st['busy_seconds']:.3f} | "
              f"{st['utilization']:.0%} | {st['concurrency']} |")
        w("")

    p = doc["prometheus"]
    if p.get("enabled"):
        w("## Metrics overhead\n")
        w(f"Prometheus ({'/usr/bin/prometheus'}, scrape_interval 1 s, loopback) ran during all "
          f"timing rounds. The metrics pair is {a['metrics_epochs']} epochs of train per run. "
          f"Successful scrapes: {p.get('scrapes_ok', 0):.0f} of {p.get('scrapes_attempted', 0):.0f} "
          f"attempted (flowloader is only up during metrics-on runs, "
          f"{p.get('metrics_on_wall_seconds', 0):.1f} s in all); largest "
          f"flowloader_samples_total seen {_f(p.get('flowloader_samples_total_max'))}; "
          f"{_f(p.get('scrape_samples_max'))} samples per scrape, slowest scrape "
          f"{_f(p.get('scrape_duration_max_seconds'), '{:.4f} s')}; Prometheus itself used "
          f"{_f(p.get('prometheus_cpu_seconds'), '{:.2f}')} CPU s over the "
          f"{_f(p.get('loop_seconds'), '{:.0f}')} s of timing rounds.\n")
        c = p.get("scrape_cost")
        if c:
            w(f"Direct cost of a scrape (idle pipeline after its epoch, {c['scrapes']} GETs of "
              f"/metrics back to back, flowloader's CPU time before/after): "
              f"{c['cpu_ms_per_scrape']:.2f} ms CPU and {c['wall_ms_per_scrape']:.2f} ms wall "
              f"per scrape of {c['bytes_per_scrape']} bytes, i.e. "
              f"{c['share_of_workers_at_1hz']:.3%} of the 2 workers' cores at one scrape per "
              "second. This excludes per-sample costs that only exist with metrics on (if "
              "any); the A/B rows include them, but with the run-to-run noise shown per round "
              "in Context.\n")

    q = doc["quality"]
    w("## Eval output quality\n")
    w(f"flowloader `--transform=eval --layout=uint8_hwc` (no shuffle, via runtime/pipeline.h) vs "
      f"torchvision Resize(256)+CenterCrop(224) on the PIL image, {q['images']} images spread "
      f"over the dataset: PSNR mean {q['psnr_mean_db']:.2f} dB, median "
      f"{q['psnr_median_db']:.2f} dB, min {q['psnr_min_db']:.2f} dB; {q['below_30db']} below "
      f"30 dB; largest pixel difference {q['max_abs_pixel_diff']}/255. Worst: " +
      ", ".join(f"{x['key']} {x['psnr_db']:.1f} dB" for x in q["worst"][:3]) + ".\n")

    if doc["curve"]:
        w(curve_markdown(doc))

    w("## Checks\n")
    if doc["checks"]:
        for i in doc["checks"]:
            w(f"- {i}")
    else:
        w("- sample, batch and stage item counts as expected in every run; no skips, no "
          "errors; every stage utilization within [0, 1]; Prometheus scraped the runs.")
    w("")
    w("## Method notes\n")
    w("- Each variant is its own process, spawned from the harness; rounds alternate "
      "systems (A B C … A B C …). Same dataset (page cache warm), same cores.")
    w("- img/s after 1st batch: rows after the first batch over first→last batch time; "
      "incl. startup: all rows over spawn→last batch (flowloader: its own clock from "
      "Pipeline::Create plus an exec probe of `flowloader stages`).")
    w("- Time to first batch: in the table, from the spawn for both (PyTorch: interpreter "
      "start and `import torch` included, as a user sees it; flowloader: its "
      "`first_batch_seconds`, measured from main(), plus the exec probe). The target rows "
      "use flowloader's own from-main() figure, as the CLI defines it.")
    w("- Peak RSS/PSS: the sum over the process tree (DataLoader workers included), sampled "
      "every 20 ms. RSS in the timed runs (cheap); PSS in one extra untimed run per variant, "
      "because reading smaps_rollup costs ~7 ms per PyTorch process.")
    w("- foreign CPU: CPU used by other processes on the machine during the run, as a share "
      "of all cores (from /proc/stat), median over the runs; a run is noisy above "
      f"{NOISY:.0%}. Before each run the harness waits (at most 15 s) for a quiet 0.5 s "
      f"window, and re-runs a noisy run up to {a['noisy_retries']} times, within "
      f"{a['quiet_budget']:.0f} s per phase ({f.get('quiet_seconds_spent', 0)} s spent, "
      f"{f.get('noisy_runs_discarded', 0)} noisy runs discarded, kept in the JSON).")
    w("- flowloader runs use `--device=cpu --metrics_address=` (unless metrics on), "
      "and flowloader's default `--prefetch_batches` (3 batch buffers); PyTorch uses its default "
      "prefetch_factor 2 × 2 workers = 4 batches in flight, "
      "pin_memory=False; train shuffles, eval does not, in both.")
    w("")
    return "\n".join(out)


def curve_markdown(doc):
    out = ["## Curve: images/s after 1st batch (incl. startup) by num_workers × batch_size\n"]
    curve = doc["curve"]
    workers = sorted({w for row in curve for w in row["by_workers"]})
    out.append("| system | transform | batch | " + " | ".join(f"w={w}" for w in workers) + " |")
    out.append("|---|---|---:|" + "---:|" * len(workers))
    for row in curve:
        cells = []
        for w in workers:
            c = row["by_workers"].get(w)
            cells.append("–" if not c else
                         f"{c['ips_after_first']:.0f} ({c['ips_with_startup']:.0f})"
                         + ("*" if c["noisy_runs"] else ""))
        out.append(f"| {row['system']} | {row['transform']} | {row['batch_size']} | " +
                   " | ".join(cells) + " |")
    out.append("")
    n = doc["dataset"]["images"]
    if any(c["noisy_runs"] for row in curve for c in row["by_workers"].values()):
        out.append(f"\\* a kept run of that point was noisy (> {NOISY:.0%} foreign CPU).")
    out.append(f"With {n} images, batch 256 is {math.ceil(n / 256)} batches, so its "
               f"after-1st-batch figure covers {math.ceil(n / 256) - 1}.\n")
    return "\n".join(out)
