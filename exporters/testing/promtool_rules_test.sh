#!/bin/bash
# promtool_rules_test.sh: the shipped Prometheus files pass promtool: rule syntax, the
# example config (which loads the rules), and the rule unit tests.
set -euo pipefail

promtool="$(command -v promtool || echo /usr/bin/promtool)"
dir="exporters/prometheus"

"$promtool" check rules "$dir/flowloader.rules.yml"
"$promtool" check config "$dir/prometheus.yml"
"$promtool" test rules "$dir/flowloader.rules_test.yml"
