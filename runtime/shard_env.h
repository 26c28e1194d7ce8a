// shard_env.h: this process's rank and world size, from the launcher's environment.
//
// Distributed launchers say which shard a process is: torchrun (torch.distributed.run)
// sets RANK and WORLD_SIZE, Slurm's srun SLURM_PROCID and SLURM_NTASKS. A pipeline that
// is not told its shard takes it from there, in that order, else rank 0 of 1; the
// result says where it was found so the run's log can say it too. (The Python module
// adds one more source after these: an initialised torch.distributed group.)
//
//   absl::StatusOr<EnvironmentShard> shard = flowloader::ShardFromEnvironment();
//   if (!shard.ok()) { /* RANK=abc, or RANK without WORLD_SIZE: the status says which */ }
//   options.rank = shard->rank;
//   options.world_size = shard->world_size;
//   LogInfo(shard->Describe());   // "shard: rank 1 of 2 (from RANK/WORLD_SIZE)"
//
// Thread-safety: ShardFromEnvironment reads the environment (getenv), which is safe as
// long as no thread calls setenv at the same time.
#ifndef FLOWLOADER_RUNTIME_SHARD_ENV_H_
#define FLOWLOADER_RUNTIME_SHARD_ENV_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace flowloader {

// EnvironmentShard is a rank and world size and where they came from.
struct EnvironmentShard {
  int rank = 0;
  int world_size = 1;
  // source names the variables read ("RANK/WORLD_SIZE", "SLURM_PROCID/SLURM_NTASKS"),
  // or "default" when none was set.
  std::string source = "default";

  // Describe is one log line: "shard: rank R of W (from SOURCE)".
  std::string Describe() const;
};

// GetEnvFunction looks a variable up (nullptr when unset); tests pass a map's lookup.
using GetEnvFunction = std::function<const char*(const char*)>;

// ShardFromEnvironment reads RANK/WORLD_SIZE, else SLURM_PROCID/SLURM_NTASKS, else
// returns rank 0 of 1. A pair counts as set when either variable is; then both must be
// integers with 0 <= rank < world_size, or the error names the variable, its value and
// the flags that override it.
absl::StatusOr<EnvironmentShard> ShardFromEnvironment(const GetEnvFunction& getenv_fn = nullptr);

}  // namespace flowloader

#endif  // FLOWLOADER_RUNTIME_SHARD_ENV_H_
