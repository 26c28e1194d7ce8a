// loader.cc: Loader (see loader.h).
#include "python/internal/loader.h"

#include <utility>

#include "absl/time/clock.h"
#include "runtime/run_summary.h"

namespace flowloader {
namespace python_internal {

absl::StatusOr<std::unique_ptr<Loader>> Loader::Create(const LoaderOptions& options) {
  absl::StatusOr<std::unique_ptr<Pipeline>> pipeline = Pipeline::Create(options.pipeline);
  if (!pipeline.ok()) return pipeline.status();
  std::unique_ptr<Loader> loader(new Loader(std::move(*pipeline)));
  if (!options.metrics_address.empty()) {
    absl::StatusOr<std::shared_ptr<MetricsServer>> server =
        MetricsServer::Shared(options.metrics_address);
    if (!server.ok()) return server.status();
    absl::StatusOr<MetricsRegistration> registration =
        MetricsRegistration::Create(*server, loader->pipeline_->stats());
    if (!registration.ok()) return registration.status();
    loader->server_ = *std::move(server);
    loader->metrics_ = *std::move(registration);
  }
  return loader;
}

Loader::Loader(std::unique_ptr<Pipeline> pipeline)
    : pipeline_(std::move(pipeline)), fetcher_([this] { FetchLoop(); }) {}

Loader::~Loader() {
  Stop();
  fetcher_.join();
}

void Loader::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  pipeline_->Stop();
}

void Loader::FetchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    changed_.wait(lock, [this] { return stopping_ || (requested_ && !ready_); });
    if (stopping_) return;
    lock.unlock();
    Fetched fetched;
    fetched.status = pipeline_->Next(&fetched.batch, &fetched.end_of_epoch);
    lock.lock();
    result_ = std::move(fetched);
    ready_ = true;
    changed_.notify_all();
  }
}

bool Loader::WaitNext(absl::Duration timeout, Fetched* out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!requested_) {
    requested_ = true;
    changed_.notify_all();
  }
  const bool came = changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                                      [this] { return ready_ || stopping_; });
  if (!came) return false;
  if (!ready_) {  // Stopped with nothing fetched.
    *out = Fetched{absl::CancelledError("the loader was closed"), nullptr, false};
    return true;
  }
  *out = std::move(result_);
  result_ = Fetched{};
  ready_ = false;
  requested_ = false;
  Record(*out);
  return true;
}

void Loader::Record(const Fetched& fetched) {
  const double now = absl::ToDoubleSeconds(absl::Now() - created_);
  if (fetched.batch != nullptr && first_batch_seconds_ < 0) first_batch_seconds_ = now;
  if (fetched.end_of_epoch) epoch_end_seconds_.push_back(now);
}

Cursor Loader::NextCursor() {
  std::unique_lock<std::mutex> lock(mu_);
  // A running Next may have moved the pipeline's cursor past a batch not yet handed over.
  changed_.wait(lock, [this] { return !requested_ || ready_ || stopping_; });
  if (ready_ && result_.batch != nullptr) {
    return Cursor{result_.batch->epoch, result_.batch->index};
  }
  return pipeline_->Checkpoint();
}

bool Loader::WaitCursor(absl::Duration timeout, Cursor* out) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!changed_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                         [this] { return !requested_ || ready_ || stopping_; })) {
    return false;
  }
  if (ready_ && result_.batch != nullptr) {
    *out = Cursor{result_.batch->epoch, result_.batch->index};
  } else {
    *out = pipeline_->Checkpoint();
  }
  return true;
}

std::string Loader::SummaryJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  const double wall = absl::ToDoubleSeconds(absl::Now() - created_);
  const int64_t epochs = static_cast<int64_t>(epoch_end_seconds_.size());
  return PipelineSummaryJson(*pipeline_, wall, epochs, first_batch_seconds_, first_batch_seconds_,
                             epoch_end_seconds_);
}

}  // namespace python_internal
}  // namespace flowloader
