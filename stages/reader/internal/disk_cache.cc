// disk_cache.cc: DiskCache, the on-disk cache of remote data (see disk_cache.h).
#include "stages/reader/internal/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stages/core/log.h"

namespace flowloader::internal {
namespace {

constexpr char kMagic[8] = {'F', 'L', 'C', 'A', 'C', 'H', 'E', '1'};
constexpr uint64_t kIdentitySeed = 0x6964656e74697479;  // A second hash of the identity.
// Temporary files older than this were left by a process that died while writing.
constexpr int64_t kStaleTmpSeconds = 3600;

// Trailer ends every entry file.
struct Trailer {
  char magic[8];
  uint64_t payload_size;
  uint64_t payload_hash;
  uint64_t identity_hash;
};
static_assert(sizeof(Trailer) == 32, "the trailer is 32 bytes on disk");

Trailer MakeTrailer(const std::string& identity, absl::string_view payload) {
  Trailer t;
  std::memcpy(t.magic, kMagic, sizeof(kMagic));
  t.payload_size = payload.size();
  t.payload_hash = XXH3_64bits(payload.data(), payload.size());
  t.identity_hash = XXH3_64bits_withSeed(identity.data(), identity.size(), kIdentitySeed);
  return t;
}

// Valid reports whether `file` (a whole entry file) is `identity`'s intact entry.
bool Valid(const std::string& identity, absl::string_view file) {
  if (file.size() < sizeof(Trailer)) return false;
  Trailer found;
  std::memcpy(&found, file.data() + file.size() - sizeof(Trailer), sizeof(Trailer));
  const absl::string_view payload = file.substr(0, file.size() - sizeof(Trailer));
  const Trailer want = MakeTrailer(identity, payload);
  return std::memcmp(found.magic, kMagic, sizeof(kMagic)) == 0 &&
         found.payload_size == want.payload_size && found.payload_hash == want.payload_hash &&
         found.identity_hash == want.identity_hash;
}

// PreadAll reads `length` bytes at `offset` into `out` (fewer only at the end of file);
// false on an error.
bool PreadAll(int fd, int64_t offset, int64_t length, char* out, int64_t* got) {
  *got = 0;
  while (*got < length) {
    const ssize_t n = ::pread(fd, out + *got, static_cast<size_t>(length - *got), offset + *got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    *got += n;
  }
  return true;
}

bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Locked holds the directory's lock: a process-local mutex (flock does not exclude
// threads sharing one descriptor) and flock(2) (excludes other processes).
class Locked {
 public:
  Locked(std::mutex& mu, int fd) : lock_(mu), fd_(fd) {
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~Locked() { ::flock(fd_, LOCK_UN); }

 private:
  std::lock_guard<std::mutex> lock_;
  const int fd_;
};

int64_t ReadUsage(int fd) {
  int64_t used = 0;
  int64_t got = 0;
  if (!PreadAll(fd, 0, sizeof(used), reinterpret_cast<char*>(&used), &got) ||
      got != sizeof(used)) {
    return 0;
  }
  return std::max<int64_t>(used, 0);
}

void WriteUsage(int fd, int64_t used) {
  const ssize_t n = ::pwrite(fd, &used, sizeof(used), 0);
  (void)n;  // A lost update is corrected by the next scan.
}

// TmpNumber numbers this process's temporary files (one sequence for every DiskCache of
// the process, so that two caches on one directory never pick the same name).
uint64_t TmpNumber() {
  static std::atomic<uint64_t> next{0};
  return next++;
}

// The lock and accounting mutex of every DiskCache (the process-local half of Locked).
std::mutex& ProcessLock() {
  static auto* mu = new std::mutex;
  return *mu;
}

}  // namespace

struct DiskCache::Entry {
  int fd = -1;
  int64_t payload_size = 0;
  uint64_t inode = 0;
  ~Entry() {
    if (fd >= 0) ::close(fd);
  }
};

absl::StatusOr<std::unique_ptr<DiskCache>> DiskCache::Create(const DiskCacheOptions& options) {
  const auto refuse = [&options](const std::string& what) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cache_dir ", options.dir, ": ", what, " (", std::strerror(errno),
        "); give cache_dir a writable directory, or leave it empty for no disk cache"));
  };
  if (options.bytes < 1 || options.block_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("cache_bytes must be >= 1, got ",
                                                   options.bytes));
  }
  const std::string root = options.dir + "/flowloader-cache";
  for (const std::string& dir : {options.dir, root, root + "/tmp"}) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return refuse("cannot make " + dir);
  }
  const std::string lock_path = root + "/lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return refuse("cannot open " + lock_path);
  std::unique_ptr<DiskCache> cache(new DiskCache(options, root, fd));
  {
    // Recount (a process killed between a rename and its accounting leaves it short).
    Locked lock(ProcessLock(), fd);
    WriteUsage(fd, cache->ScanAndEvict(options.bytes));
  }
  return cache;
}

DiskCache::~DiskCache() { ::close(lock_fd_); }

std::string DiskCache::EntryPath(const std::string& name) const {
  return absl::StrCat(root_, "/", name.substr(0, 2), "/", name);
}

bool DiskCache::OpenEntry(const std::string& identity, bool trust_known, Entry* entry,
                          std::string* whole) {
  const uint64_t name_hash = XXH3_64bits(identity.data(), identity.size());
  const std::string path = EntryPath(absl::StrFormat("%016x", name_hash));
  entry->fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (entry->fd < 0) return false;  // Not cached (or removed meanwhile).
  struct stat st;
  if (::fstat(entry->fd, &st) != 0) return false;
  entry->inode = static_cast<uint64_t>(st.st_ino);
  entry->payload_size = static_cast<int64_t>(st.st_size) - static_cast<int64_t>(sizeof(Trailer));
  if (trust_known && entry->payload_size >= 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = validated_.find(name_hash);
    if (it != validated_.end() && it->second == entry->inode) return true;
  }
  // Validate the whole file: size, payload hash and identity, from the trailer.
  std::string file(static_cast<size_t>(st.st_size), '\0');
  int64_t got = 0;
  if (!PreadAll(entry->fd, 0, st.st_size, file.data(), &got) || got != st.st_size ||
      !Valid(identity, file)) {
    ++corrupt_;
    LogWarning(absl::StrCat("cache_dir: ", path, " is damaged (", st.st_size,
                            " bytes); removed, fetched again"));
    RemoveDamaged(path, entry->inode);
    return false;
  }
  ::futimens(entry->fd, nullptr);  // Recently used: evicted last.
  if (trust_known) {
    std::lock_guard<std::mutex> lock(mu_);
    validated_[name_hash] = entry->inode;
  }
  file.resize(static_cast<size_t>(entry->payload_size));
  *whole = std::move(file);
  return true;
}

bool DiskCache::Get(const std::string& identity, std::string* contents) {
  Entry entry;
  std::string whole;
  if (!OpenEntry(identity, /*trust_known=*/false, &entry, &whole)) {
    ++misses_;
    return false;
  }
  *contents = std::move(whole);
  ++hits_;
  hit_bytes_ += static_cast<int64_t>(contents->size());
  return true;
}

bool DiskCache::GetRange(const std::string& identity, int64_t offset, int64_t length,
                         std::string* contents) {
  Entry entry;
  std::string whole;  // Set when the entry was validated now.
  if (!OpenEntry(identity, /*trust_known=*/true, &entry, &whole)) {
    ++misses_;
    return false;
  }
  const int64_t begin = std::min(offset, entry.payload_size);
  const int64_t n = std::min(length, entry.payload_size - begin);
  if (whole.size() == static_cast<size_t>(entry.payload_size)) {
    contents->append(whole, static_cast<size_t>(begin), static_cast<size_t>(n));
  } else {
    const size_t at = contents->size();
    contents->resize(at + static_cast<size_t>(n));
    int64_t got = 0;
    if (!PreadAll(entry.fd, begin, n, contents->data() + at, &got) || got != n) {
      contents->resize(at);  // Cut since it was validated: validated and removed again.
      ForgetAndRemove(identity, entry.inode);
      ++corrupt_;
      ++misses_;
      return false;
    }
  }
  ++hits_;
  hit_bytes_ += n;
  return true;
}

void DiskCache::Put(const std::string& identity, absl::string_view payload) {
  const int64_t size = static_cast<int64_t>(payload.size() + sizeof(Trailer));
  if (size > options_.bytes) return;  // Would evict everything else, and itself.
  const std::string name = absl::StrFormat("%016x", XXH3_64bits(identity.data(), identity.size()));
  const std::string tmp =
      absl::StrCat(root_, "/tmp/", name, ".", ::getpid(), ".", TmpNumber());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return CountWriteError(tmp);
  const Trailer trailer = MakeTrailer(identity, payload);
  const bool written =
      WriteAll(fd, payload) &&
      WriteAll(fd, absl::string_view(reinterpret_cast<const char*>(&trailer), sizeof(trailer)));
  if (::close(fd) != 0 || !written) {
    ::unlink(tmp.c_str());
    return CountWriteError(tmp);
  }
  Locked lock(ProcessLock(), lock_fd_);
  const std::string path = EntryPath(name);
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {  // Another reader of the same data was first.
    ::unlink(tmp.c_str());
    return;
  }
  const std::string dir = path.substr(0, path.rfind('/'));
  if ((::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return CountWriteError(path);
  }
  written_bytes_ += static_cast<int64_t>(payload.size());
  int64_t used = ReadUsage(lock_fd_) + size;
  if (used > options_.bytes) used = ScanAndEvict(options_.bytes);
  WriteUsage(lock_fd_, used);
}

void DiskCache::ForgetAndRemove(const std::string& identity, uint64_t inode) {
  const uint64_t name_hash = XXH3_64bits(identity.data(), identity.size());
  {
    std::lock_guard<std::mutex> lock(mu_);
    validated_.erase(name_hash);
  }
  RemoveDamaged(EntryPath(absl::StrFormat("%016x", name_hash)), inode);
}

void DiskCache::RemoveDamaged(const std::string& path, uint64_t inode) {
  Locked lock(ProcessLock(), lock_fd_);
  struct stat st;
  // Only the file found damaged: another process may have put a good one there since.
  if (::lstat(path.c_str(), &st) != 0 || static_cast<uint64_t>(st.st_ino) != inode) return;
  if (::unlink(path.c_str()) != 0) return;
  WriteUsage(lock_fd_, std::max<int64_t>(0, ReadUsage(lock_fd_) - st.st_size));
}

int64_t DiskCache::ScanAndEvict(int64_t limit) {
  struct File {
    struct timespec mtime;
    int64_t size;
    std::string path;
  };
  std::vector<File> files;
  int64_t total = 0;
  const time_t now = ::time(nullptr);
  DIR* top = ::opendir(root_.c_str());
  if (top == nullptr) return 0;
  while (const struct dirent* d = ::readdir(top)) {
    const std::string name = d->d_name;
    if (name == "." || name == ".." || name == "lock") continue;
    const std::string sub = root_ + "/" + name;
    DIR* dir = ::opendir(sub.c_str());
    if (dir == nullptr) continue;
    while (const struct dirent* e = ::readdir(dir)) {
      const std::string file = e->d_name;
      if (file == "." || file == "..") continue;
      const std::string path = sub + "/" + file;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (name == "tmp") {  // Being written; or left by a process that died writing it.
        if (now - st.st_mtime > kStaleTmpSeconds) ::unlink(path.c_str());
        continue;
      }
      files.push_back({st.st_mtim, static_cast<int64_t>(st.st_size), path});
      total += st.st_size;
    }
    ::closedir(dir);
  }
  ::closedir(top);
  if (total <= limit) return total;
  // Least recently used first, down to 90% of the limit so that eviction is not
  // repeated on every addition.
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  const int64_t target = limit - limit / 10;
  for (const File& f : files) {
    if (total <= target) break;
    if (::unlink(f.path.c_str()) != 0) continue;
    total -= f.size;
    ++evicted_;
  }
  return total;
}

void DiskCache::CountWriteError(const std::string& what) {
  ++write_errors_;
  if (!write_error_logged_.exchange(true)) {
    LogWarning(absl::StrCat("cache_dir: cannot write ", what, " (", std::strerror(errno),
                            "); reads go on without caching what does not fit"));
  }
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.hit_bytes = hit_bytes_.load();
  s.written_bytes = written_bytes_.load();
  s.evicted = evicted_.load();
  s.corrupt = corrupt_.load();
  s.write_errors = write_errors_.load();
  return s;
}

int64_t DiskCache::used_bytes() const { return ReadUsage(lock_fd_); }

int64_t DiskCache::UsedBytesIn(const std::string& dir) {
  const std::string lock_path = dir + "/flowloader-cache/lock";
  const int fd = ::open(lock_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const int64_t used = ReadUsage(fd);
  ::close(fd);
  return used;
}

int64_t DiskCache::FreeBytesAt(const std::string& dir) {
  std::string at = dir.empty() ? "." : dir;
  while (true) {
    struct statvfs vfs;
    if (::statvfs(at.c_str(), &vfs) == 0) {
      return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    }
    if (at == "/" || at == ".") return -1;
    const size_t slash = at.find_last_of('/');  // The parent, which may exist already.
    at = slash == std::string::npos ? "." : slash == 0 ? "/" : at.substr(0, slash);
  }
}

}  // namespace flowloader::internal
