#!/usr/bin/env bash
# http_robustness_test.sh: runs http_robustness.py (see its docstring for the method)
# against the flowloader CLI. Needs /usr/bin/python3 and wrk (dev.sh installs both).
set -euo pipefail
FLOWLOADER="$1"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 "$HERE/http_robustness.py" "$FLOWLOADER"
