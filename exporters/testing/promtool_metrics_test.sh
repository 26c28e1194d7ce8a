#!/bin/bash
# promtool_metrics_test.sh: `promtool check metrics` on a real HTTP scrape of a
# MetricsServer serving the synthetic pipelines (fake_pipeline_server --scrape_once).
set -euo pipefail

server="exporters/fake_pipeline_server"
promtool="$(command -v promtool || echo /usr/bin/promtool)"
out="${TEST_TMPDIR:-/tmp}/metrics.txt"

timeout 30 "$server" --scrape_once > "$out"

# Every family of the catalogue, for both pipelines where it applies.
for family in \
    flowloader_stage_items_in_total flowloader_stage_items_out_total \
    flowloader_stage_bytes_total flowloader_stage_busy_seconds_total \
    flowloader_stage_idle_seconds_total flowloader_stage_blocked_seconds_total \
    flowloader_stage_in_flight flowloader_stage_concurrency flowloader_stage_errors_total \
    flowloader_stage_latency_seconds flowloader_op_busy_seconds_total \
    flowloader_op_applied_total flowloader_batches_total flowloader_samples_total \
    flowloader_samples_skipped_total flowloader_epoch flowloader_consumer_wait_seconds_total \
    flowloader_start_time_seconds flowloader_uptime_seconds \
    flowloader_last_batch_timestamp_seconds flowloader_host_bytes_in_flight \
    flowloader_host_bytes_budget flowloader_pinned_bytes_in_flight \
    flowloader_pinned_bytes_budget flowloader_queue_depth flowloader_queue_capacity \
    flowloader_autotune_value flowloader_autotune_decisions_total \
    flowloader_storage_requests_total flowloader_storage_bytes_total \
    flowloader_storage_retries_total flowloader_storage_errors_total \
    flowloader_storage_request_duration_seconds flowloader_build_info; do
  if ! grep -q "^# HELP ${family} " "$out"; then
    echo "FAIL: no HELP for ${family} in the scrape" >&2
    exit 1
  fi
done
inf_bucket='flowloader_stage_latency_seconds_bucket{pipeline="train",stage="decode",le="+Inf"}'
grep -qF "${inf_bucket} " "$out"
# "stuck" never failed an item: its built-in reasons are there at 0 (not absent).
zero_errors='flowloader_stage_errors_total{pipeline="stuck",stage="decode",reason="truncated"} 0'
if ! grep -qxF "${zero_errors}" "$out"; then
  echo "FAIL: no ${zero_errors} in the scrape" >&2
  exit 1
fi

# The autotuner's series: the knob's value and its decisions by direction.
for series in 'flowloader_autotune_value{pipeline="train",knob="num_workers"} 2' \
    'flowloader_autotune_decisions_total{pipeline="train",knob="num_workers",direction="up"} 1'; do
  if ! grep -qxF "${series}" "$out"; then
    echo "FAIL: no ${series} in the scrape" >&2
    exit 1
  fi
done
# Per-op cost: the augment stage's ops, labelled by pipeline, stage and op.
for series in 'flowloader_op_busy_seconds_total{pipeline="train",stage="augment",op="color_jitter"} ' \
    'flowloader_op_applied_total{pipeline="train",stage="augment",op="normalize"} '; do
  if ! grep -qF "${series}" "$out"; then
    echo "FAIL: no ${series}in the scrape" >&2
    exit 1
  fi
done
echo "promtool check metrics on $(wc -l < "$out") lines:"
if ! "$promtool" check metrics < "$out"; then
  echo "FAIL: promtool reported problems (above)" >&2
  exit 1
fi
echo "promtool check metrics: no problems"
