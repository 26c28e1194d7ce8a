#!/bin/sh
# write_version_cc.sh STATUS_FILE: prints version.cc, whose Version() returns the
# STABLE_FLOWLOADER_VERSION line of Bazel's stable status (runtime/workspace_status.sh).
version=$(sed -n 's/^STABLE_FLOWLOADER_VERSION //p' "$1" | tr -d '"\\')
cat <<CC
#include "runtime/version.h"
namespace flowloader {
const char* Version() { return "${version:-unknown}"; }
}  // namespace flowloader
CC
