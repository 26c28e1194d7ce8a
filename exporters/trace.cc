#include "exporters/trace.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "exporters/internal/json.h"

namespace flowloader {

using exporters_internal::JsonString;

std::string ChromeTraceJson(const PipelineStats& stats) {
  std::vector<TraceBuffer::Span> spans;
  if (stats.trace != nullptr) spans = stats.trace->Spans();
  int64_t origin = 0;  // Times are relative to the first span, in microseconds.
  if (!spans.empty()) {
    origin = std::min_element(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
               return a.start_nanos < b.start_nanos;
             })->start_nanos;
  }
  std::string out = "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"pipeline\": ";
  absl::StrAppend(&out, JsonString(stats.pipeline()), "}, \"traceEvents\": [\n");
  std::set<uint32_t> threads;
  bool first = true;
  for (const TraceBuffer::Span& s : spans) {
    const bool consumer = s.stage < 0 || s.stage >= static_cast<int32_t>(stats.stages().size());
    const StageStats* stage = consumer ? nullptr : stats.stages()[s.stage].get();
    // An op's span (a row of its stage's op_costs) nests inside the stage's span: same
    // thread, within its times, so the viewers draw it one level down.
    const bool op = stage != nullptr && s.op >= 0 &&
                    s.op < static_cast<int32_t>(stage->op_costs().size());
    const std::string name = consumer ? "consumer wait"
                             : op     ? stage->op_costs()[s.op].name
                                      : stage->name();
    const std::string args = op ? absl::StrFormat("{\"item\": %d, \"stage\": %s}", s.item,
                                                  JsonString(stage->name()))
                                : absl::StrFormat("{\"item\": %d}", s.item);
    // The consumer gets its own row (tid 0): its waits overlap the workers' spans.
    const uint32_t tid = consumer ? 0 : s.thread;
    threads.insert(tid);
    absl::StrAppend(&out, first ? "" : ",\n",
                    absl::StrFormat("{\"name\": %s, \"cat\": \"%s\", \"ph\": \"X\", \"pid\": 1, "
                                    "\"tid\": %u, \"ts\": %.3f, \"dur\": %.3f, "
                                    "\"args\": %s}",
                                    JsonString(name), consumer ? "consumer" : op ? "op" : "stage",
                                    tid, (s.start_nanos - origin) / 1e3, s.duration_nanos / 1e3,
                                    args));
    first = false;
  }
  for (uint32_t tid : threads) {
    const std::string label = tid == 0 ? "consumer (Next)" : absl::StrCat("worker ", tid);
    absl::StrAppend(&out, first ? "" : ",\n",
                    absl::StrFormat("{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, "
                                    "\"tid\": %u, \"args\": {\"name\": %s}}",
                                    tid, JsonString(label)));
    first = false;
  }
  absl::StrAppend(&out, "\n]}\n");
  return out;
}

absl::Status WriteChromeTrace(const PipelineStats& stats, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << ChromeTraceJson(stats);
  if (!file) return absl::InternalError(absl::StrCat("cannot write trace to ", path));
  return absl::OkStatus();
}

}  // namespace flowloader
