// train_service.cc: a C++ training service: a small CNN (libtorch) trained from
// flowloader batches, the pipeline's metrics served at /metrics while it trains.
//
//   bazel build //examples/cpp:train_service
//   bazel-bin/examples/cpp/train_service DATA STEPS [METRICS_ADDRESS=127.0.0.1:9464]
//
// Each batch is wrapped as at::Tensor without a copy: torch::from_blob over the batch's
// host buffer, with a deleter that holds the shared_ptr<const Batch>, so the buffer goes
// back to the pipeline's pool when libtorch frees the tensor (here: at the end of the
// step). Labels are wrapped the same way. Prints "metrics at URL" first, a line every 10
// steps, then "trained N steps ..." with images/s and the share of time spent waiting
// for data (the Pipeline's consumer wait).
//
// Thread-safety: one training thread calls Pipeline::Next; libtorch uses its own pool.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "exporters/metrics_exporter.h"
#include "runtime/pipeline.h"

namespace {

// SmallCnn is two convolutions, global pooling and a linear classifier.
struct SmallCnnImpl : torch::nn::Module {
  explicit SmallCnnImpl(int64_t classes)
      : conv1(register_module("conv1", torch::nn::Conv2d(
                                           torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        conv2(register_module("conv2", torch::nn::Conv2d(
                                           torch::nn::Conv2dOptions(16, 32, 3).padding(1)))),
        fc(register_module("fc", torch::nn::Linear(32, classes))) {}

  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::relu(conv2->forward(x));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc->forward(x);
  }

  torch::nn::Conv2d conv1;
  torch::nn::Conv2d conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE(SmallCnn);

// TensorsOf wraps a batch's images and labels as tensors over the batch's own memory;
// each tensor's deleter keeps the batch (and so its pool buffer) alive.
std::pair<torch::Tensor, torch::Tensor> TensorsOf(std::shared_ptr<const flowloader::Batch> batch) {
  auto keep = [batch](void*) mutable { batch.reset(); };
  torch::Tensor images = torch::from_blob(const_cast<void*>(batch->host_data()), batch->shape(),
                                          keep, torch::TensorOptions().dtype(torch::kFloat32));
  torch::Tensor labels = torch::from_blob(const_cast<int64_t*>(batch->labels.data()),
                                          {static_cast<int64_t>(batch->labels.size())}, keep,
                                          torch::TensorOptions().dtype(torch::kInt64));
  return {images, labels};
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "train_service: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Fail("usage: train_service DATA STEPS [METRICS_ADDRESS]");
  const int64_t steps = std::atoll(argv[2]);
  const std::string metrics_address = argc > 3 ? argv[3] : "127.0.0.1:9464";
  flowloader::PipelineOptions options;
  options.data = argv[1];
  options.name = "train_service";
  options.batch_size = 16;
  options.num_workers = 2;
  options.image_size = 32;  // Small, so a CPU-only service trains in seconds.
  options.epochs = 0;       // Until we stop.
  options.device = flowloader::DeviceChoice::kCpu;
  auto pipeline = flowloader::Pipeline::Create(options);
  if (!pipeline.ok()) return Fail(std::string(pipeline.status().message()));
  auto server = flowloader::MetricsServer::Shared(metrics_address);
  if (!server.ok()) return Fail(std::string(server.status().message()));
  auto metrics = flowloader::MetricsRegistration::Create(*server, (*pipeline)->stats());
  if (!metrics.ok()) return Fail(std::string(metrics.status().message()));
  std::printf("metrics at %s\n", (*server)->url().c_str());
  std::fflush(stdout);

  torch::manual_seed(0);
  torch::set_num_threads(1);  // The pipeline's workers have the other core.
  SmallCnn model(10);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const auto start = std::chrono::steady_clock::now();
  double waited = 0;
  int64_t images_seen = 0;
  float loss_value = 0;
  for (int64_t step = 0; step < steps;) {
    std::shared_ptr<const flowloader::Batch> batch;
    bool end_of_epoch = false;
    const auto asked = std::chrono::steady_clock::now();
    if (absl::Status s = (*pipeline)->Next(&batch, &end_of_epoch); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    waited += Seconds(std::chrono::steady_clock::now() - asked);
    if (end_of_epoch || batch->size() == 0) continue;
    images_seen += batch->size();
    auto [images, labels] = TensorsOf(std::move(batch));
    optimizer.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(images), labels);
    loss.backward();
    optimizer.step();
    loss_value = loss.item<float>();
    if (++step % 10 == 0) {
      std::printf("step %lld loss %.3f\n", static_cast<long long>(step), loss_value);
      std::fflush(stdout);
    }
  }
  const double wall = Seconds(std::chrono::steady_clock::now() - start);
  std::printf("trained %lld steps in %.2f s: %.0f images/s, final loss %.3f, waited for "
              "data %.0f%% of the time\n",
              static_cast<long long>(steps), wall, images_seen / wall, loss_value,
              100 * waited / wall);
  return 0;
}
