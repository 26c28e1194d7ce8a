// version.h: flowloader's version, stamped from git at build time
// (runtime/workspace_status.sh through Bazel's stable status; see runtime/BUILD).
//
// Thread-safety: constant.
#ifndef FLOWLOADER_RUNTIME_VERSION_H_
#define FLOWLOADER_RUNTIME_VERSION_H_

namespace flowloader {

// Version is e.g. "0.0.64-gb0530e9abc" (commits since the first, the commit, "-dirty"
// for uncommitted changes), or a tag's name when the commit is tagged.
const char* Version();

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_VERSION_H_
