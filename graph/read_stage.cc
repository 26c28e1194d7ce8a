// read_stage.cc: the read stage: a sample's file, or its member of a tar shard with one
// positioned read, through the dataset's Env (pread, an HTTP range request, an S3 GET).
// For remote data it starts the reads of the samples coming next on a ReadAhead
// (stages/reader/read_ahead.h), so that many requests are in flight, not one per worker.
#include "graph/read_stage.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "graph/internal/sample_buffers.h"
#include "stages/reader/data_sources.h"
#include "stages/reader/env.h"
#include "stages/reader/file_reader.h"
#include "stages/reader/read_ahead.h"
#include "stages/reader/schemes.h"
#include "stages/core/sample_error.h"
#include "stages/core/worker_memory.h"

namespace flowloader {
namespace {

using graph_internal::Borrow;

// The adaptive read-ahead's floor for datasets of objects of their own (see Create).
constexpr int kObjectsMinInFlight = 16;

class ReadStage : public SampleStage {
 public:
  ReadStage(const Dataset* dataset, std::unique_ptr<FileReader> reader,
            std::unique_ptr<FileReader> shard_reader, std::unique_ptr<ReadAhead> read_ahead,
            std::shared_ptr<const WorkerMemory> worker_memory)
      : dataset_(dataset),
        reader_(std::move(reader)),
        shard_reader_(std::move(shard_reader)),
        read_ahead_(std::move(read_ahead)),
        worker_memory_(std::move(worker_memory)) {}

  absl::Status Process(SampleContext& sample) const override {
    const SampleSource& source = *sample.source;
    // Known bad when listed (no image or label, a damaged shard): skipped by its reason.
    if (!source.error.ok()) return source.error;
    // Borrowed before Take, so a read-ahead swaps the thread's spare buffer for the
    // finished bytes and fills it with a later read (ReadAhead recycles buffers).
    Borrow(sample.bytes);
    if (read_ahead_ != nullptr) {
      absl::Status status;
      if (read_ahead_->Take({sample.epoch, sample.position}, &sample.bytes, &status) &&
          !IsReadYourself(status)) {
        return status;
      }
      // A member of a shard in the block cache: whether its blocks came ahead of it is
      // what says if the block fetches keep up (its own Take shows it only for the one
      // sample that claimed each block).
      const StorageEnv* storage = dataset_->storage();
      if (source.shard >= 0 && storage != nullptr && storage->BlockCached(sample.path)) {
        read_ahead_->NoteBlockRead(storage->BlocksCached(sample.path, source.offset, source.size));
      }
    }
    return Read(source, sample.path, &sample.bytes);
  }
  size_t BytesProduced(const SampleContext& sample) const override {
    return sample.bytes.size();
  }

  // Two batches' worth of the in-flight ceiling: enough that the reads started keep the
  // limit busy while the workers take the finished ones.
  int64_t AnnounceWindow() const override {
    return read_ahead_ == nullptr ? 0 : 2 * int64_t{read_ahead_->options().max_in_flight};
  }
  void Announce(int64_t epoch, int64_t position, int64_t index, bool due_now) const override {
    if (dataset_->computed()) return;  // No file behind it (OfSize): nothing to read ahead.
    const SampleSource& source = dataset_->sample(index);
    if (!source.error.ok()) return;
    std::string path = dataset_->FullPath(index);
    if (!IsRemotePath(path)) return;  // Local files of a mixture: read by the workers.
    const StorageEnv* storage = dataset_->storage();
    if (source.shard >= 0 && storage != nullptr && storage->BlockCached(path)) {
      if (due_now && !storage->BlocksCached(path, source.offset, source.size)) {
        // The batch being dispatched (the run's first): its member alone, with one small
        // range request ahead of every block fetch, instead of waiting for its whole
        // block (~50 blocks of 1 MiB for a first batch of 64 from shuffled shards). The
        // blocks come behind, claimed by the samples announced after it (or by the worker
        // that needs one later); the bytes read here are not kept.
        read_ahead_->StartUrgent(
            {epoch, position}, [this, storage, &source, path = std::move(path)](std::string* out) {
              return shard_reader_->ReadRangeWith(path, source.offset, source.size, out, [&] {
                return storage->ReadMember(path, source.offset, source.size, out);
              });
            });
        return;
      }
      // A shard in the block cache: its blocks are read ahead (each once), and the
      // worker copies the member out of the cache into its own buffer. Read ahead by
      // members instead, each of ~9 members of a 1 MiB block took a thread hand-off and
      // a fresh read-ahead buffer (perf, shards from nginx: ~15% of the page faults).
      if (storage->ClaimBlocks(path, source.offset, source.size)) {
        read_ahead_->StartFetch({epoch, position},
                                [storage, &source, path = std::move(path)]() {
                                  // Whether it sent a request (ReadAhead's latencies).
                                  return storage->FetchBlocks(path, source.offset, source.size);
                                });
      }
      return;
    }
    // A read ahead holds its bytes outside the worker's share until taken, so only a
    // sample of at most ReadAheadMostBytes is read ahead: a larger one (a shard member of
    // known size, or a file found larger) is read by its worker, within its share. Read
    // ahead, two 140 MB shard members from a server that ignores Range took a run to 682
    // MiB under memory_limit_mb 512 (401 without read-ahead).
    const int64_t most = ReadAheadMostBytes();
    if (source.shard >= 0 && source.size > most) return;
    // Files of their own (an s3:// prefix) are not urgent: 64 GETs at once to a gateway
    // on the same 2 cores made the first batch slower (s3_bench.py, folder_s3: 0.82-0.97
    // s -> 1.43-1.66 s at load 17-19) than the adaptive limit's 8.
    read_ahead_->Start({epoch, position},
                       [this, &source, most, path = std::move(path)](std::string* contents) {
                         return Read(source, path, contents, most);
                       });
  }

 private:
  // Read reads the sample's bytes, but not those of a file larger than a worker may hold
  // for one sample: the decode counts them (twice: they and the JPEG scan's copy) and would
  // refuse it as decode_memory after the read had held them (two 504 MB BMPs went
  // 982 MiB past memory_limit_mb 256), so it is that skip, unread. Only a comparison per
  // sample: the limit rides on the read's own size check.
  // `most` (> 0): a read ahead's bound; a file over it but within the share is left to
  // its worker (ReadYourself), refused unread like the rest.
  absl::Status Read(const SampleSource& source, const std::string& path, std::string* contents,
                    int64_t most = 0) const {
    const int64_t share = worker_memory_->bytes();
    const int64_t limit = most > 0 && (share <= 0 || most < share) ? most : share;
    if (source.shard >= 0) {  // A member of known size (the read-ahead left out larger ones).
      if (share > 0 && source.size > share && source.size <= shard_reader_->max_file_bytes()) {
        return OverWorkerMemory(source.size);
      }
      return shard_reader_->ReadRange(path, source.offset, source.size, contents);
    }
    if (limit <= 0 || limit >= reader_->max_file_bytes()) return reader_->Read(path, contents);
    absl::Status status = reader_->Read(path, limit, contents);
    if (status.code() != absl::StatusCode::kResourceExhausted) return status;
    const int64_t size = TooLargeSize(status);
    if (size <= limit) return status;
    if (size > reader_->max_file_bytes()) {  // Over max_file_bytes too: that is the refusal.
      return TooLarge(path, size, reader_->max_file_bytes());
    }
    if (limit != share) {  // Over the read-ahead's bound only: its worker reads it.
      contents->clear();
      return ReadYourself();
    }
    return OverWorkerMemory(size);
  }
  // ReadAheadMostBytes is the largest sample read ahead: max_bytes over max_in_flight (512
  // KiB by default), so that the reads in flight together stay within the plan's part.
  int64_t ReadAheadMostBytes() const {
    const ReadAheadOptions& o = read_ahead_->options();
    return std::max<int64_t>(1, o.max_bytes / std::max(1, o.max_in_flight));
  }
  static absl::Status ReadYourself() {
    absl::Status status = absl::AbortedError("over the read-ahead's bound: the worker reads it");
    status.SetPayload(kReadYourself, absl::Cord("1"));
    return status;
  }
  static bool IsReadYourself(const absl::Status& status) {
    return status.code() == absl::StatusCode::kAborted &&
           status.GetPayload(kReadYourself).has_value();
  }
  static constexpr char kReadYourself[] = "flowloader/read_yourself";

  absl::Status OverWorkerMemory(int64_t size) const {
    return worker_memory_->Check(size, reason::kDecodeMemory,
                                 "reading the file (its bytes, before decoding)");
  }

  const Dataset* const dataset_;
  std::unique_ptr<FileReader> reader_;
  std::unique_ptr<FileReader> shard_reader_;
  std::unique_ptr<ReadAhead> read_ahead_;  // Null unless the data is remote.
  const std::shared_ptr<const WorkerMemory> worker_memory_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SampleStage>> MakeReadStage(const StageArgs& args, StageEnv& env) {
  FileReaderOptions o;
  o.max_retries = static_cast<int>(args.GetInt("max_retries"));
  // Checked here, in the options' own names (FileReader says "initial_backoff"): a
  // backoff of 1e18 ms waited for ever on the first transient error.
  constexpr double kMaxBackoffMs = 60 * 1000;
  const double backoff_ms = args.GetFloat("backoff_ms");
  if (!(backoff_ms >= 0 && backoff_ms <= kMaxBackoffMs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("backoff_ms must be in [0, ", kMaxBackoffMs, "] (milliseconds), got ",
                     args.GetString("backoff_ms")));
  }
  o.initial_backoff = absl::Microseconds(backoff_ms * 1000.0);
  o.max_file_bytes = args.GetInt("max_file_bytes");
  if (o.max_file_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_file_bytes must be >= 1, got ", o.max_file_bytes));
  }
  // Files of their own go through the dataset's StorageEnv when it has one (an s3://
  // ImageFolder), which passes local paths to the same env.env.
  o.env = env.dataset != nullptr && env.dataset->storage() != nullptr ? env.dataset->shard_env()
                                                                      : env.env;
  absl::StatusOr<std::unique_ptr<FileReader>> reader = FileReader::Create(o);
  if (!reader.ok()) return reader.status();
  if (env.dataset != nullptr) o.env = env.dataset->shard_env();
  absl::StatusOr<std::unique_ptr<FileReader>> shard_reader = FileReader::Create(o);
  if (!shard_reader.ok()) return shard_reader.status();
  std::unique_ptr<ReadAhead> read_ahead;
  const int limit = env.dataset != nullptr && env.dataset->storage() != nullptr
                        ? env.dataset->storage()->options().http.read_ahead
                        : 0;
  if (limit != 0 && HasRemoteData(*env.dataset)) {
    ReadAheadOptions ra;
    ra.adaptive = limit == HttpOptions::kReadAheadAuto;
    if (!ra.adaptive) ra.max_in_flight = ra.min_in_flight = limit;
    // Objects of their own (an s3:// prefix) start at 16 in flight: on a store with a
    // short round trip Little's law asks for fewer, but a gateway serves GETs that arrive
    // together for less CPU each (radosgw + OSD on the same 2 cores: 0.34 -> 0.26 ms a GET,
    // docs/performance.md). Shards keep 8: more of their 1 MiB block fetches in flight
    // slowed the first batch's member reads (0.28 -> 0.95 s from the gateway).
    if (ra.adaptive && env.dataset->shards().empty()) ra.min_in_flight = kObjectsMinInFlight;
    ra.report = env.dataset->storage()->storage_stats();
    absl::StatusOr<std::unique_ptr<ReadAhead>> made = ReadAhead::Create(ra);
    if (!made.ok()) return made.status();
    read_ahead = std::move(*made);
    env.memory.push_back(
        {"read ahead", "read_ahead", ra.max_bytes,
         absl::StrCat("remote reads finished ahead of the read stage, at most ",
                      ra.max_bytes >> 20, " MiB (", ra.adaptive ? "up to " : "",
                      ra.max_in_flight, " requests in flight)"),
         {"read_ahead"}});
  }
  return std::unique_ptr<SampleStage>(new ReadStage(
      env.dataset, std::move(*reader), std::move(*shard_reader), std::move(read_ahead),
      env.worker_memory));
}

}  // namespace flowloader
