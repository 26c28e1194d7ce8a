#include "runtime/internal/cli_flags.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "runtime/internal/spec_reader.h"

namespace flowloader {
namespace cli {
namespace {

const FlagDef* FindFlag(const CommandDef& command, const std::string& name) {
  for (const FlagDef& f : command.flags) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// UnknownFlag explains a flag `command` does not have: another subcommand's, a typo of
// one of its own, or nothing known.
absl::Status UnknownFlag(const CommandDef& command, const std::vector<CommandDef>& all,
                         const std::string& name) {
  for (const CommandDef& other : all) {
    if (other.name != command.name && FindFlag(other, name) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " is a flag of flowloader ",
                                                     other.name, ", not of flowloader ",
                                                     command.name));
    }
  }
  std::vector<std::string> known;
  for (const FlagDef& f : command.flags) known.push_back(f.name);
  std::string hint = spec_internal::Suggestion(name, known);
  if (absl::StartsWith(hint, "(did you mean '")) {
    hint = absl::StrCat("(did you mean --", hint.substr(15, hint.size() - 15 - 3), "?)");
  } else {
    hint = absl::StrCat("(flowloader ", command.name, " --help lists its flags)");
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flag --", name, " for flowloader ", command.name, " ", hint));
}

}  // namespace

absl::StatusOr<ParsedFlags> ParseFlags(const CommandDef& command,
                                       const std::vector<CommandDef>& all,
                                       const std::vector<std::string>& args) {
  ParsedFlags parsed;
  auto set = [&parsed](const std::string& name, std::string value) {
    if (parsed.given.count(name) == 0) parsed.order.push_back(name);
    parsed.given[name] = std::move(value);
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      if (i + 1 < args.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "unexpected argument '", args[i + 1], "' after --: flowloader ", command.name,
            " takes only flags"));
      }
      break;
    }
    if (arg == "--help" || arg == "-h" || arg == "-help") {
      parsed.help = true;
      continue;
    }
    if (!absl::StartsWith(arg, "-") || arg == "-") {
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected argument '", arg, "': flowloader ", command.name,
          " takes only flags (--name=value)"));
    }
    // Abseil accepts -name as well as --name.
    std::string body = arg.substr(absl::StartsWith(arg, "--") ? 2 : 1);
    const size_t eq = body.find('=');
    std::string name = body.substr(0, eq);
    const FlagDef* flag = FindFlag(command, name);
    if (flag == nullptr && eq == std::string::npos && absl::StartsWith(name, "no")) {
      const FlagDef* negated = FindFlag(command, name.substr(2));
      if (negated != nullptr && negated->is_bool) {
        set(negated->name, "false");
        continue;
      }
    }
    if (flag == nullptr) return UnknownFlag(command, all, name);
    if (eq != std::string::npos) {
      set(name, body.substr(eq + 1));
    } else if (flag->is_bool) {
      set(name, "true");
    } else if (i + 1 < args.size()) {
      set(name, args[++i]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value (--", name, "=VALUE)"));
    }
  }
  return parsed;
}

std::string CommandHelp(const CommandDef& command) {
  std::string out = absl::StrCat("usage: ", command.usage, "\n  ", command.summary, "\n\nflags:\n");
  size_t width = 0;
  for (const FlagDef& f : command.flags) {
    width = std::max(width, f.name.size() + f.default_text.size() + 3);
  }
  for (const FlagDef& f : command.flags) {
    std::string left = absl::StrCat("--", f.name, "=", f.default_text);
    left.resize(std::max(width, left.size()) + 2, ' ');
    absl::StrAppend(&out, "  ", left, f.doc, "\n");
  }
  absl::StrAppend(&out, "  --help", std::string(width > 4 ? width - 4 : 1, ' '),
                  "this text\n");
  return out;
}

std::string ProgramHelp(const std::vector<CommandDef>& all) {
  std::string out = "usage: flowloader COMMAND [flags]\n\ncommands:\n";
  for (const CommandDef& c : all) absl::StrAppend(&out, "  ", c.usage, "\n      ", c.summary, "\n");
  absl::StrAppend(&out,
                  "\nflowloader COMMAND --help lists that command's flags with their defaults;\n"
                  "flowloader --version prints the version.\n");
  return out;
}

}  // namespace cli
}  // namespace flowloader
