#!/usr/bin/python3
"""dashboard_test: the Grafana dashboard and provisioning files are file-provisionable
and follow the rules in shared/FIELD-NOTES.md; lists every shipped PromQL expression.

No Grafana is started: these are structural checks. The expressions themselves are run
against a real Prometheus by prometheus_e2e_test.py.
"""

import json
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import promql_exprs  # noqa: E402
import yaml  # noqa: E402

DS_UID = "flowloader-prometheus"
DATASOURCES = "exporters/grafana/provisioning/datasources/flowloader.yaml"
PROVIDERS = "exporters/grafana/provisioning/dashboards/flowloader.yaml"
RECORD_NAME = re.compile(r"^[a-z_]+:[a-z0-9_]+:[a-z0-9_]+$")  # level:metric:operations


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(promql_exprs.DASHBOARD, encoding="utf-8") as f:
            cls.text = f.read()
        cls.dash = json.loads(cls.text)
        cls.panels = list(promql_exprs._panels(cls.dash["panels"]))

    def test_is_not_an_export_for_sharing(self):
        # `__inputs` and ${DS_...} placeholders break file provisioning.
        self.assertNotIn("__inputs", self.dash)
        self.assertNotIn("${DS_", self.text)
        self.assertIsNone(self.dash.get("id"))
        self.assertTrue(self.dash.get("uid"))

    def test_every_panel_and_target_uses_the_fixed_datasource(self):
        for p in self.panels:
            self.assertEqual(p["datasource"], {"type": "prometheus", "uid": DS_UID}, p["title"])
            for t in p.get("targets", []):
                self.assertEqual(t["datasource"]["uid"], DS_UID, p["title"])
        for v in self.dash["templating"]["list"]:
            self.assertEqual(v["datasource"]["uid"], DS_UID, v["name"])

    def test_pipeline_variable_lists_pipelines_from_build_info(self):
        (var,) = [v for v in self.dash["templating"]["list"] if v["name"] == "pipeline"]
        self.assertEqual(var["query"], "label_values(flowloader_build_info, pipeline)")

    def test_every_selector_is_filtered_by_the_pipeline_variable(self):
        for e in promql_exprs.dashboard_exprs():
            if e.kind != "panel":
                continue
            for m in re.finditer(r"flowloader_[a-z_]+", e.expr):
                rest = e.expr[m.end():]
                self.assertTrue(rest.startswith('{pipeline=~"$pipeline"'),
                                f"{e.source}: {m.group(0)} is not filtered by $pipeline")

    def test_rate_comes_before_aggregation(self):
        for e in promql_exprs.all_exprs():
            self.assertNotRegex(e.expr, r"(rate|increase)\(\s*(sum|avg|max|min)", e.source)

    def test_required_panels_exist(self):
        exprs = " ".join(t["expr"] for p in self.panels for t in p.get("targets", []))
        for needle in [
            "sum by (stage) (rate(flowloader_stage_items_out_total",  # throughput
            "sum by (stage) (rate(flowloader_stage_busy_seconds_total",  # utilization
            "flowloader_stage_concurrency",
            "rate(flowloader_consumer_wait_seconds_total",  # starvation
            "flowloader_queue_depth", "flowloader_queue_capacity",  # occupancy
            "flowloader_host_bytes_in_flight", "flowloader_host_bytes_budget",
            "flowloader_pinned_bytes_in_flight", "flowloader_pinned_bytes_budget",
            "rate(flowloader_stage_errors_total",
            "histogram_quantile(0.99, sum by (stage, le) "
            "(rate(flowloader_stage_latency_seconds_bucket",
            "flowloader_autotune_value", "flowloader_autotune_decisions_total",
            "sum by (stage, op) (rate(flowloader_op_busy_seconds_total",  # per-op cost
        ]:
            self.assertIn(needle, exprs)

    def test_bottleneck_stat_shows_stage_and_starvation_in_one_panel(self):
        (stat,) = [p for p in self.panels if p["title"].startswith("Bottleneck stage")]
        self.assertEqual(stat["type"], "stat")
        first, second = stat["targets"]
        self.assertTrue(first["expr"].startswith("topk(1, "))
        self.assertIn("{{stage}}", first["legendFormat"])
        self.assertTrue(first["instant"])  # Only the current bottleneck, not every past one.
        self.assertIn("flowloader_consumer_wait_seconds_total", second["expr"])

    def test_panel_ids_are_unique_and_placed(self):
        ids = [p["id"] for p in self.panels]
        self.assertEqual(len(ids), len(set(ids)))
        for p in self.panels:
            self.assertTrue({"x", "y", "w", "h"} <= set(p["gridPos"]), p["title"])
            self.assertTrue(p.get("description"), p["title"])


class ProvisioningTest(unittest.TestCase):
    def test_datasource_has_the_uid_the_dashboard_uses(self):
        with open(DATASOURCES, encoding="utf-8") as f:
            (ds,) = yaml.safe_load(f)["datasources"]
        self.assertEqual(ds["uid"], DS_UID)
        self.assertEqual(ds["type"], "prometheus")
        self.assertIn("timeInterval", ds["jsonData"])  # $__rate_interval needs it.

    def test_dashboard_provider_reads_files(self):
        with open(PROVIDERS, encoding="utf-8") as f:
            (provider,) = yaml.safe_load(f)["providers"]
        self.assertEqual(provider["type"], "file")
        self.assertTrue(provider["options"]["path"])


class RulesTest(unittest.TestCase):
    def test_recording_rules_are_named_level_metric_operations(self):
        for e in promql_exprs.rule_exprs():
            if e.kind == "record":
                self.assertRegex(e.name, RECORD_NAME)
                self.assertIn("pipeline", e.labels, e.source)

    def test_alerts_have_duration_severity_and_summary(self):
        with open(promql_exprs.RULES, encoding="utf-8") as f:
            groups = yaml.safe_load(f)["groups"]
        alerts = [r for g in groups for r in g["rules"] if "alert" in r]
        self.assertEqual({a["alert"] for a in alerts}, {
            "FlowloaderConsumerStarving", "FlowloaderStageErrorsRising",
            "FlowloaderStageStalled", "FlowloaderNoBatches"})
        for a in alerts:
            self.assertIn("for", a, a["alert"])
            self.assertIn(a["labels"]["severity"], ("warning", "critical"))
            self.assertTrue(a["annotations"]["summary"])


class ExpressionListTest(unittest.TestCase):
    def test_lists_every_expression_with_its_labels(self):
        exprs = promql_exprs.all_exprs()
        kinds = {e.kind for e in exprs}
        self.assertEqual(kinds, {"variable", "panel", "record", "alert"})
        variables = dict(promql_exprs.DEFAULT_VARIABLES, pipeline="train")
        for e in exprs:
            substituted = promql_exprs.substitute(e.expr, variables)
            self.assertNotIn("$", substituted, e.source)
            print(f"{e.source}: {substituted}  labels={sorted(e.labels)}")

    def test_substitute_respects_name_boundaries(self):
        self.assertEqual(promql_exprs.substitute(
            'x{p=~"$pipeline"}[$__rate_interval] ${pipeline} [[pipeline]] $pipelines',
            {"pipeline": "a", "__rate_interval": "4s"}),
            'x{p=~"a"}[4s] a a $pipelines')


if __name__ == "__main__":
    unittest.main(verbosity=2)
