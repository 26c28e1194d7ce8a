"""promql_exprs: every PromQL expression exporters/ ships, read from the files themselves.

The dashboard (grafana/flowloader-dashboard.json) and the rules
(prometheus/flowloader.rules.yml) are the single source; tests import this module to get
each expression together with the labels its consumer reads: a panel's legendFormat
{{label}}s, an alert's {{ $labels.label }}s, a recording rule's `by (...)` labels. A
result missing one of those labels would show a blank legend or annotation.

Run as a script to list them: python3 exporters/testing/promql_exprs.py [--substitute]

Thread-safety: plain functions, no shared state.
"""

import json
import re
import sys
from dataclasses import dataclass, field

import yaml

DASHBOARD = "exporters/grafana/flowloader-dashboard.json"
RULES = "exporters/prometheus/flowloader.rules.yml"

# Grafana's built-in variables, as a test against a 1 s scrape interval sees them.
# $__rate_interval = max(4 x scrape interval, $__interval + scrape interval).
DEFAULT_VARIABLES = {
    "__rate_interval": "4s",
    "__interval": "1s",
    "__interval_ms": "1000",
    "__range": "1m",
    "__range_s": "60",
}


@dataclass
class Expr:
    """One expression and where it comes from."""

    source: str  # "panel 'Title' A", "variable pipeline", "record NAME", "alert NAME"
    kind: str  # "panel", "variable", "record", "alert"
    name: str  # Panel title, variable, record or alert name.
    expr: str  # As written (Grafana variables not substituted).
    labels: set = field(default_factory=set)  # Labels every result series must carry.
    instant: bool = False


_LEGEND_LABEL = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
_ANNOTATION_LABEL = re.compile(r"\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)")
_BY_CLAUSE = re.compile(r"\bby\s*\(([^)]*)\)")
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$")


def _by_labels(expr):
    """Labels of the first `by (...)` clause: what the outermost aggregation keeps."""
    m = _BY_CLAUSE.search(expr)
    return {l.strip() for l in m.group(1).split(",") if l.strip()} if m else set()


def dashboard_exprs(path=DASHBOARD):
    """Every target expression and query variable of the dashboard."""
    with open(path, encoding="utf-8") as f:
        dash = json.load(f)
    out = []
    for var in dash.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query", "")
        m = _LABEL_VALUES.match(query or "")
        if m:  # label_values(metric, label) is Grafana's; the PromQL behind it is `metric`.
            out.append(Expr(f"variable {var['name']}", "variable", var["name"], m.group(1),
                            {m.group(2)}))
        else:
            out.append(Expr(f"variable {var['name']}", "variable", var["name"], query))
    for panel in _panels(dash.get("panels", [])):
        for target in panel.get("targets", []):
            if not target.get("expr"):
                continue
            out.append(Expr(
                f"panel '{panel['title']}' {target.get('refId', '?')}", "panel", panel["title"],
                target["expr"], set(_LEGEND_LABEL.findall(target.get("legendFormat", ""))),
                bool(target.get("instant"))))
    return out


def _panels(panels):
    """Panels including those nested in collapsed rows."""
    for p in panels:
        yield p
        yield from _panels(p.get("panels", []))


def rule_exprs(path=RULES):
    """Every recording rule and alert of the rules file."""
    with open(path, encoding="utf-8") as f:
        rules = yaml.safe_load(f)
    out = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "record" in rule:
                out.append(Expr(f"record {rule['record']}", "record", rule["record"],
                                rule["expr"], _by_labels(rule["expr"])))
            else:
                text = " ".join(str(v) for v in rule.get("annotations", {}).values())
                out.append(Expr(f"alert {rule['alert']}", "alert", rule["alert"], rule["expr"],
                                set(_ANNOTATION_LABEL.findall(text))))
    return out


def all_exprs(dashboard=DASHBOARD, rules=RULES):
    return dashboard_exprs(dashboard) + rule_exprs(rules)


def substitute(expr, variables):
    """Replaces $var, ${var} and [[var]] with variables[var] (longest names first)."""
    for name in sorted(variables, key=len, reverse=True):
        value = variables[name]
        expr = expr.replace("${" + name + "}", value).replace("[[" + name + "]]", value)
        expr = re.sub(r"\$" + re.escape(name) + r"(?![a-zA-Z0-9_])", lambda _: value, expr)
    return expr


def main(argv):
    variables = dict(DEFAULT_VARIABLES, pipeline="train")
    for e in all_exprs():
        expr = substitute(e.expr, variables) if "--substitute" in argv else e.expr
        print(f"{e.source}\t{sorted(e.labels)}\t{expr}")


if __name__ == "__main__":
    main(sys.argv[1:])
