// shard_env_test.cc: ShardFromEnvironment on made-up environments.
#include "runtime/shard_env.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace flowloader {
namespace {

// LookupIn returns a getenv over `vars` (which must outlive it).
GetEnvFunction LookupIn(const std::map<std::string, std::string>& vars) {
  return [&vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

struct ShardCase {
  const char* test_name;
  std::map<std::string, std::string> vars;
  int rank;
  int world_size;
  const char* source;
};

class ShardFromEnvironmentTest : public ::testing::TestWithParam<ShardCase> {};

TEST_P(ShardFromEnvironmentTest, FindsTheShardAndSaysWhere) {
  const ShardCase& c = GetParam();
  absl::StatusOr<EnvironmentShard> shard = ShardFromEnvironment(LookupIn(c.vars));
  ASSERT_TRUE(shard.ok()) << shard.status();
  EXPECT_EQ(shard->rank, c.rank);
  EXPECT_EQ(shard->world_size, c.world_size);
  EXPECT_EQ(shard->source, c.source);
}

INSTANTIATE_TEST_SUITE_P(
    Launchers, ShardFromEnvironmentTest,
    ::testing::Values(
        ShardCase{"Nothing", {}, 0, 1, "default"},
        ShardCase{"Torchrun", {{"RANK", "1"}, {"WORLD_SIZE", "2"}}, 1, 2, "RANK/WORLD_SIZE"},
        ShardCase{"Slurm", {{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}}, 3, 4,
                  "SLURM_PROCID/SLURM_NTASKS"},
        ShardCase{"TorchrunInsideSlurm",
                  {{"RANK", "0"}, {"WORLD_SIZE", "8"}, {"SLURM_PROCID", "1"},
                   {"SLURM_NTASKS", "2"}},
                  0, 8, "RANK/WORLD_SIZE"}),
    [](const ::testing::TestParamInfo<ShardCase>& info) { return info.param.test_name; });

struct BadShardCase {
  const char* test_name;
  std::map<std::string, std::string> vars;
  const char* message;
};

class BadShardEnvironmentTest : public ::testing::TestWithParam<BadShardCase> {};

TEST_P(BadShardEnvironmentTest, RefusesWithTheVariableAndTheOverride) {
  const BadShardCase& c = GetParam();
  absl::StatusOr<EnvironmentShard> shard = ShardFromEnvironment(LookupIn(c.vars));
  ASSERT_FALSE(shard.ok());
  EXPECT_EQ(shard.status().message(), c.message);
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, BadShardEnvironmentTest,
    ::testing::Values(
        BadShardCase{"NotAnInteger",
                     {{"RANK", "one"}, {"WORLD_SIZE", "2"}},
                     "RANK='one' is not an integer: fix the launcher's environment or pass "
                     "--rank and --world_size"},
        BadShardCase{"RankWithoutWorldSize",
                     {{"RANK", "1"}},
                     "WORLD_SIZE=(unset) is needed with its partner variable: fix the "
                     "launcher's environment or pass --rank and --world_size"},
        BadShardCase{"RankPastWorldSize",
                     {{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "2"}},
                     "SLURM_PROCID='2' must be < SLURM_NTASKS (2): fix the launcher's "
                     "environment or pass --rank and --world_size"},
        BadShardCase{"WorldSizeZero",
                     {{"RANK", "0"}, {"WORLD_SIZE", "0"}},
                     "WORLD_SIZE='0' must be >= 1: fix the launcher's environment or pass "
                     "--rank and --world_size"}),
    [](const ::testing::TestParamInfo<BadShardCase>& info) { return info.param.test_name; });

TEST(EnvironmentShardTest, DescribeNamesRankWorldSizeAndSource) {
  EnvironmentShard shard;
  shard.rank = 1;
  shard.world_size = 2;
  shard.source = "RANK/WORLD_SIZE";
  EXPECT_EQ(shard.Describe(), "shard: rank 1 of 2 (from RANK/WORLD_SIZE)");
}

}  // namespace
}  // namespace flowloader
