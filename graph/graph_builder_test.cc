// GraphBuilder: the list it builds is the one a spec with the same items gives, and Build
// refuses what Pipeline::Create would, in the planner's words.
#include "graph/graph_builder.h"

#include "gtest/gtest.h"

namespace flowloader {
namespace {

TEST(GraphBuilderTest, BuildsTheItemsAsASpecWould) {
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode").Name("jpeg").Concurrency(2).Outputs({"pixels"});
  graph.Add("augment").Inputs({"pixels"}).Outputs({"view0"}).Option("image_size", "96");
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  ASSERT_TRUE(stages.ok()) << stages.status();
  ASSERT_EQ(stages->size(), 3u);
  EXPECT_EQ((*stages)[0].type, "read");
  EXPECT_EQ((*stages)[1].name, "jpeg");
  EXPECT_EQ((*stages)[1].concurrency, 2);
  EXPECT_EQ((*stages)[1].outputs, std::vector<std::string>{"pixels"});
  EXPECT_EQ((*stages)[2].inputs, std::vector<std::string>{"pixels"});
  EXPECT_EQ((*stages)[2].args.at("image_size"), "96");
}

TEST(GraphBuilderTest, RefusesAGraphCreateWouldRefuse) {
  GraphBuilder graph;
  graph.Add("read");
  graph.Add("decode");
  graph.Add("augment").Inputs({"nope"});
  absl::StatusOr<std::vector<StageSpec>> stages = graph.Build();
  ASSERT_FALSE(stages.ok());
  EXPECT_EQ(stages.status().message(),
            "stage 'augment' reads 'nope', which no stage writes (image fields written before "
            "it: image): bind its input 'image' to one of those");
  GraphBuilder unknown;
  unknown.Add("sharpen");
  EXPECT_EQ(unknown.Build().status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace flowloader
