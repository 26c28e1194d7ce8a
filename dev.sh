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
  libcurl4-openssl-dev libwebp-dev libtiff-dev libgif-dev nginx python3-dev pybind11-dev
  python3-pytest libtorch-dev libxxhash-dev
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

case "${1:-}" in
  setup)
    setup
    ;;
  demo)
    setup
    bazel build //runtime:flowloader
    ./bazel-bin/runtime/flowloader make-dataset --out=.sample_data --classes=10 --images_per_class=30
    ./bazel-bin/runtime/flowloader run --data=.sample_data --batch_size=64 --num_workers=2 \
      --epochs=2 --summary_json=.sample_data.summary.json "${@:2}"
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
