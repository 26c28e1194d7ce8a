// shard_env.cc: ShardFromEnvironment (see shard_env.h).
#include "runtime/shard_env.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace flowloader {
namespace {

// LauncherVariables are one launcher's rank and world-size variable names.
struct LauncherVariables {
  const char* rank;
  const char* world_size;
};

// The launchers in the order they are tried: torchrun first, since a torchrun job
// inside a Slurm allocation sees both and torchrun's ranks are the ones it uses.
constexpr LauncherVariables kLaunchers[] = {
    {"RANK", "WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS"},
};

absl::Status Unusable(const char* name, const char* value, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      name, "=", value == nullptr ? "(unset)" : absl::StrCat("'", value, "'"), " ", why,
      ": fix the launcher's environment or pass --rank and --world_size"));
}

absl::StatusOr<int> ReadInt(const char* name, const char* value, int min) {
  int out = 0;
  if (value == nullptr) return Unusable(name, value, "is needed with its partner variable");
  if (!absl::SimpleAtoi(value, &out)) return Unusable(name, value, "is not an integer");
  if (out < min) return Unusable(name, value, absl::StrCat("must be >= ", min));
  return out;
}

}  // namespace

std::string EnvironmentShard::Describe() const {
  return absl::StrCat("shard: rank ", rank, " of ", world_size, " (from ", source, ")");
}

absl::StatusOr<EnvironmentShard> ShardFromEnvironment(const GetEnvFunction& getenv_fn) {
  const GetEnvFunction lookup =
      getenv_fn ? getenv_fn : [](const char* name) -> const char* { return std::getenv(name); };
  for (const LauncherVariables& launcher : kLaunchers) {
    const char* rank_text = lookup(launcher.rank);
    const char* world_text = lookup(launcher.world_size);
    if (rank_text == nullptr && world_text == nullptr) continue;
    absl::StatusOr<int> world_size = ReadInt(launcher.world_size, world_text, 1);
    if (!world_size.ok()) return world_size.status();
    absl::StatusOr<int> rank = ReadInt(launcher.rank, rank_text, 0);
    if (!rank.ok()) return rank.status();
    if (*rank >= *world_size) {
      return Unusable(launcher.rank, rank_text,
                      absl::StrCat("must be < ", launcher.world_size, " (", *world_size, ")"));
    }
    EnvironmentShard shard;
    shard.rank = *rank;
    shard.world_size = *world_size;
    shard.source = absl::StrCat(launcher.rank, "/", launcher.world_size);
    return shard;
  }
  return EnvironmentShard{};
}

}  // namespace flowloader
