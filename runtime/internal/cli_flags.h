// cli_flags.h: the command line's flags, declared per subcommand in tables.
//
// Each subcommand (run, make-dataset, stages) declares its flags with their defaults and
// docs; the parser, the refusal of a flag that belongs to another subcommand, and each
// subcommand's --help all come from that table. Abseil's flags are process-wide (one
// global set for the binary), so they cannot give `run --help` only run's flags or refuse
// `make-dataset --batch_size`; this parser accepts Abseil's syntax (`--name=value`,
// `--name value`, `--bool`, `--nobool`, `--` ending the flags).
//
// Thread-safety: all functions are pure.
#ifndef FLOWLOADER_RUNTIME_INTERNAL_CLI_FLAGS_H_
#define FLOWLOADER_RUNTIME_INTERNAL_CLI_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace flowloader {
namespace cli {

// FlagDef declares one flag of a subcommand.
struct FlagDef {
  std::string name;          // Without the leading --.
  std::string default_text;  // What it is when not given ("" where there is none).
  std::string doc;
  bool is_bool = false;      // `--name` alone means true, `--noname` false.
};

// CommandDef declares one subcommand.
struct CommandDef {
  std::string name;
  std::string usage;    // One line: "flowloader run --data=DIR_OR_LIST [flags]".
  std::string summary;  // What it does, one line.
  std::vector<FlagDef> flags;
};

// ParsedFlags is what the command line gave, by flag name (the last value wins, as
// with Abseil). Only flags that were given are present.
struct ParsedFlags {
  std::map<std::string, std::string> given;
  // Flag names in the order they first appeared.
  std::vector<std::string> order;
  bool help = false;  // --help or -h was given.

  bool Has(const std::string& name) const { return given.count(name) > 0; }
};

// ParseFlags reads `args` (the words after the subcommand) against `command`'s flags.
// `all` lists every subcommand, so a flag of another one is named as such. Errors are one
// line naming the flag and what to do.
absl::StatusOr<ParsedFlags> ParseFlags(const CommandDef& command,
                                       const std::vector<CommandDef>& all,
                                       const std::vector<std::string>& args);

// CommandHelp is `command`'s --help text: usage, summary, and every flag with its
// default and doc.
std::string CommandHelp(const CommandDef& command);

// ProgramHelp is the top-level --help text: every subcommand's usage and summary.
std::string ProgramHelp(const std::vector<CommandDef>& all);

}  // namespace cli
}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_INTERNAL_CLI_FLAGS_H_
