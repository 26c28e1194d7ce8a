#!/usr/bin/env bash
# dev.sh: the project's one set-up script (Debian 12).
#   ./dev.sh demo   install what is missing, build, run the main job on the sample dataset
#   ./dev.sh test   install what is missing, run the whole test suite (what CI runs)
#   ./dev.sh setup  only install what is missing
set -euo pipefail
cd "$(dirname "$0")"

PACKAGES=(
  bazel-bootstrap g++ libtbb-dev libabsl-dev prometheus-cpp-dev libgtest-dev libgmock-dev
  libjpeg62-turbo-dev libpng-dev zlib1g-dev libyaml-cpp-dev prometheus python3 python3-pil
  python3-yaml python3-torch python3-torchvision clang libclang-rt-14-dev wrk
  libcurl4-openssl-dev libssl-dev libwebp-dev libtiff-dev libgif-dev nginx python3-dev pybind11-dev
  python3-pytest libtorch-dev libxxhash-dev nlohmann-json3-dev
  time  # /usr/bin/time -v: peak RSS in tests/memory_guard_rss_test.sh
  python3-venv python3-setuptools python3-wheel python3-numpy  # pip install . (pyproject.toml)
  ceph-mon ceph-osd radosgw ceph-common  # a real S3 server in tests (tests/testing/radosgw.sh)
  python3-boto3  # torch's side of tests/benchmarks/s3_bench.py (a Dataset reading with boto3)
)

setup() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "dev.sh: installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# demo_next SUMMARY_JSON: after the demo's run, each change autotune made (from the summary
# JSON) and what to try next.
demo_next() {
  python3 - "$1" <<'PYEOF'
import json, sys
autotune = json.load(open(sys.argv[1])).get("autotune", {})
for d in autotune.get("decisions", []):
    print(f"autotune: at {d['seconds']:.1f} s {d['knob']} {d['from']} -> {d['to']}: {d['reason']}")
PYEOF
  cat <<'EOF'

next: the diagnosis above is this run's verdict; the autotune lines say what it chose and why.
  ./dev.sh demo --consumer_ms=0 --epochs=60   the loader alone, as fast as it goes (or --consumer_ms=N: your step)
  ./dev.sh demo --transform=eval              eval preprocessing instead of train
  bazel-bin/runtime/flowloader tune --data=.sample_data --out=/tmp/tune   measure the knobs, write best.yaml
  docs/metrics.md reads the table and the diagnosis; docs/tuning.md explains autotune.
EOF
}

case "${1:-}" in
  setup)
    setup
    ;;
  demo)
    setup
    bazel build //runtime:flowloader
    ./bazel-bin/runtime/flowloader make-dataset --out=.sample_data --classes=10 --images_per_class=30
    # 20 epochs with a simulated 40 ms training step per batch: over 3 s of steady state, so
    # the diagnosis gives a verdict, and num_workers/prefetch_batches left to autotune, so
    # the run shows what it chose. Flags given to the demo come last and override these.
    ./bazel-bin/runtime/flowloader run --data=.sample_data --batch_size=64 --epochs=20 \
      --consumer_ms=40 --summary_json=.sample_data.summary.json "${@:2}"
    demo_next .sample_data.summary.json
    ;;
  test)
    setup
    bazel test //... "${@:2}"
    ;;
  *)
    echo "usage: ./dev.sh demo|test|setup [extra bazel/flowloader flags]" >&2
    exit 2
    ;;
esac
