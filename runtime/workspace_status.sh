#!/bin/sh
# Bazel's --workspace_status_command (.bazelrc): the version stamped into flowloader
# (runtime:version), from git at build time. A tree without git history says so.
cd "$(dirname "$0")/.." || exit 0
if version=$(git describe --tags --dirty 2>/dev/null); then
  :
elif commit=$(git rev-parse --short=10 HEAD 2>/dev/null); then
  dirty=$(git diff --quiet HEAD -- 2>/dev/null || echo "-dirty")
  version="0.0.$(git rev-list --count HEAD)-g${commit}${dirty}"
else
  version="unknown (built outside git)"
fi
echo "STABLE_FLOWLOADER_VERSION ${version}"
