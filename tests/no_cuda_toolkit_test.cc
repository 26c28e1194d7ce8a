// cuda_upload_test's stand-in where the build found no CUDA toolkit: it says so, visibly.
#include "gtest/gtest.h"

TEST(CudaUploadTest, NeedsTheCudaToolkitAtBuildTime) {
  GTEST_SKIP() << "built without the CUDA toolkit (no $CUDA_PATH or /usr/local/cuda)";
}
