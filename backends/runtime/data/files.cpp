// Whole-file reading, atomic writing and CRC32 (see files.h).
#include "backends/runtime/data/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "lang/diagnostics.h"

namespace spora::runtime::data {

namespace {

[[noreturn]] void fail(const std::string& message) { throw lang::UserError(message); }

std::atomic<int64_t> g_fail_after{-1};
// SPORA_TEST_SLOW_WRITES=<ms>: every atomic write pauses that long after half its bytes, so that
// a test can stop a process while a file is being written (tests/faults/interrupt_test.sh).
const int64_t g_slow_writes_ms = [] {
  const char* env = std::getenv("SPORA_TEST_SLOW_WRITES");
  return env ? std::max<int64_t>(0, std::atoll(env)) : int64_t{0};
}();
std::atomic<int64_t> g_tmp_counter{0};
std::function<void(const std::string&)> g_write_observer;  // set_write_observer

// The temporary files being written, for a signal handler (discard_unfinished_writes): fixed
// slots of plain bytes, claimed and released with atomics, never allocated.
struct Unfinished {
  std::atomic<bool> claimed{false};
  std::atomic<bool> ready{false};
  char tmp[4096];
  char target[4096];
};
Unfinished g_unfinished[8];

// Registers a temporary file for the time it exists (a write with all slots taken is simply
// not registered: it is still atomic, only its temporary file may stay after a signal).
class UnfinishedWrite {
 public:
  UnfinishedWrite(const std::string& tmp, const std::string& target) {
    if (tmp.size() >= sizeof(Unfinished::tmp) || target.size() >= sizeof(Unfinished::target))
      return;
    for (Unfinished& u : g_unfinished) {
      bool expected = false;
      if (!u.claimed.compare_exchange_strong(expected, true)) continue;
      std::memcpy(u.tmp, tmp.c_str(), tmp.size() + 1);
      std::memcpy(u.target, target.c_str(), target.size() + 1);
      u.ready.store(true);
      slot_ = &u;
      return;
    }
  }
  ~UnfinishedWrite() {
    if (!slot_) return;
    slot_->ready.store(false);
    slot_->claimed.store(false);
  }
  UnfinishedWrite(const UnfinishedWrite&) = delete;
  UnfinishedWrite& operator=(const UnfinishedWrite&) = delete;

 private:
  Unfinished* slot_ = nullptr;
};

// Closes a descriptor on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

bool is_gzip(const std::string& path) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return false;
  uint8_t magic[2] = {0, 0};
  return ::read(f.fd, magic, 2) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
}

// Up to `limit` decompressed bytes of a gzip file (one or more members), decoded with zlib's
// inflate so that an error can name the byte of the file where the stream went wrong.
Bytes read_gzip(const std::string& path, size_t limit) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail("cannot open '" + path + "': " + os_reason());
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    fail("cannot read '" + path + "': zlib cannot start");
  struct End {
    z_stream* zs;
    ~End() { inflateEnd(zs); }
  } end{&zs};
  std::vector<uint8_t> in(size_t{1} << 20);
  uint64_t in_start = 0;  // the file offset of in[0]
  bool eof = false;
  // The file offset of the next byte inflate reads.
  const auto at = [&] { return in_start + static_cast<uint64_t>(zs.next_in - in.data()); };
  const auto refill = [&] {
    in_start += static_cast<uint64_t>(zs.next_in - in.data()) + zs.avail_in;
    for (;;) {
      const ssize_t got = ::read(f.fd, in.data(), in.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0)
        fail("cannot read '" + path + "' at byte " + std::to_string(in_start) + ": " + os_reason());
      zs.next_in = in.data();
      zs.avail_in = static_cast<uInt>(got);
      eof = got == 0;
      return;
    }
  };
  zs.next_in = in.data();
  zs.avail_in = 0;
  Bytes out;
  constexpr size_t kChunk = size_t{1} << 20;
  while (out.size() < limit) {
    if (zs.avail_in == 0 && !eof) refill();
    const size_t have = out.size();
    const size_t want = std::min(kChunk, limit - have);
    out.resize(have + want);
    zs.next_out = out.data() + have;
    zs.avail_out = static_cast<uInt>(want);
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(have + (want - zs.avail_out));
    if (rc == Z_STREAM_END) {
      // Another member may follow; anything else after the stream is corruption.
      if (zs.avail_in == 0 && !eof) refill();
      if (zs.avail_in == 0) break;
      if (zs.next_in[0] != 0x1f || (zs.avail_in > 1 && zs.next_in[1] != 0x8b))
        fail("'" + path + "' is corrupt at byte " + std::to_string(at()) +
             ": bytes follow the end of its gzip stream");
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && eof)
      fail("'" + path + "' is truncated at byte " + std::to_string(at()) +
           ": its gzip stream ends there, after " + std::to_string(out.size()) +
           " decompressed bytes, before its end");
    if (rc == Z_BUF_ERROR) continue;  // no progress possible with this input: read more
    if (rc == Z_MEM_ERROR) fail("cannot read '" + path + "': out of memory in zlib");
    const std::string why = zs.msg ? zs.msg : "invalid data";
    fail("'" + path + "' is corrupt at byte " + std::to_string(at()) + ": " +
         (why == "incorrect data check"
              ? "the CRC in its gzip trailer does not match the " + std::to_string(out.size()) +
                    " bytes decompressed (damaged before this byte)"
              : why + " (gzip data, after " + std::to_string(out.size()) + " decompressed bytes)"));
  }
  return out;
}

Bytes read_plain(const std::string& path, size_t limit) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) fail("cannot open '" + path + "': " + os_reason());
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail("cannot read '" + path + "': " + os_reason());
  if (S_ISDIR(st.st_mode)) fail("cannot read '" + path + "': it is a directory");
  Bytes out(std::min(limit, static_cast<size_t>(st.st_size)));
  size_t at = 0;
  while (at < out.size()) {
    const ssize_t got = ::read(f.fd, out.data() + at, out.size() - at);
    if (got < 0) {
      if (errno == EINTR) continue;
      fail("cannot read '" + path + "': " + os_reason());
    }
    if (got == 0) break;
    at += static_cast<size_t>(got);
  }
  out.resize(at);
  return out;
}

// Writes `bytes` to fd; returns how many reached it (fewer: errno says why). A test budget
// (set_atomic_write_failure_for_testing) stops it after that many bytes with ENOSPC.
size_t write_all(int fd, std::string_view bytes, int64_t budget) {
  size_t at = 0;
  bool paused = g_slow_writes_ms == 0;
  while (at < bytes.size()) {
    size_t chunk = bytes.size() - at;
    if (!paused) {
      if (at >= bytes.size() / 2) {
        ::usleep(static_cast<useconds_t>(g_slow_writes_ms * 1000));
        paused = true;
      } else {
        chunk = bytes.size() / 2 - at;
      }
    }
    if (budget >= 0) {
      if (budget == 0) {
        errno = ENOSPC;
        return at;
      }
      chunk = std::min<size_t>(chunk, static_cast<size_t>(budget));
    }
    const ssize_t put = ::write(fd, bytes.data() + at, chunk);
    if (put < 0) {
      if (errno == EINTR) continue;
      return at;
    }
    at += static_cast<size_t>(put);
    if (budget >= 0) budget -= put;
  }
  return at;
}

}  // namespace

std::string os_reason() { return std::strerror(errno); }

std::optional<uint64_t> array_bytes(const std::vector<int64_t>& shape, uint64_t elem_size) {
  // The running element count stays within int64 too: tensors count their elements that way,
  // in the same order, so a zero dimension after an overflowing prefix is refused.
  uint64_t bytes = elem_size;
  int64_t count = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(count, d, &count) ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      return std::nullopt;
  return bytes;
}

uint64_t announced_bytes(size_t file_size, size_t offset, const std::vector<int64_t>& shape,
                         uint64_t elem_size, const std::string& path, const std::string& type,
                         bool gz) {
  const std::optional<uint64_t> data = array_bytes(shape, elem_size);
  if (!data || file_size < offset || file_size - offset < *data)
    fail("'" + path + "' is truncated " + at_byte(file_size, gz) + ": its header announces " +
         type + " (" +
         (data && *data <= UINT64_MAX - offset ? std::to_string(offset + *data) + " bytes"
                                               : std::string("a size past 64 bits")) +
         ")");
  if (file_size - offset > *data)
    fail("'" + path + "' is corrupt " + at_byte(offset + *data, gz) + ": " +
         std::to_string(file_size - offset - *data) + " bytes follow the " + type +
         " data its header announces");
  return *data;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Bytes read_file(const std::string& path, bool gunzip, bool* was_gzip) {
  const bool gz = gunzip && is_gzip(path);
  if (was_gzip) *was_gzip = gz;
  return gz ? read_gzip(path, SIZE_MAX) : read_plain(path, SIZE_MAX);
}

Bytes read_prefix(const std::string& path, size_t n, bool* was_gzip) {
  const bool gz = is_gzip(path);
  if (was_gzip) *was_gzip = gz;
  return gz ? read_gzip(path, n) : read_plain(path, n);
}

std::string at_byte(uint64_t offset, bool gz) {
  return "at byte " + std::to_string(offset) + (gz ? " of its decompressed data" : "");
}

void set_atomic_write_failure_for_testing(int64_t fail_after_bytes) { g_fail_after = fail_after_bytes; }

namespace {

// One file of an atomic write: its temporary file beside the target, written, fsync'ed and
// closed by the constructor (which removes it again when anything fails), renamed over the
// target by commit(), removed by the destructor unless committed.
class Staged {
 public:
  Staged(const std::string& path, std::string_view bytes, const std::string& unchanged)
      : path_(path), dir_(dir_of(path)), tmp_(temp_name(path, dir_)), unfinished_(tmp_, path) {
    const auto failed = [&](const std::string& what, size_t done) {
      fail("cannot write '" + path + "': " + what + " (" + std::to_string(done) + " of " +
           std::to_string(bytes.size()) + " bytes written; " + unchanged + ")");
    };
    int fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
      fail("cannot write '" + path + "': cannot create a file in '" + dir_ + "': " + os_reason());
    try {
      const size_t done = write_all(fd, bytes, g_fail_after.load());
      if (done < bytes.size()) failed(os_reason(), done);
      if (::fsync(fd) != 0) failed("fsync failed: " + os_reason(), done);
      const int rc = ::close(fd);
      fd = -1;
      if (rc != 0) failed("close failed: " + os_reason(), done);
    } catch (...) {
      if (fd >= 0) ::close(fd);
      ::unlink(tmp_.c_str());
      throw;
    }
  }
  ~Staged() {
    if (!committed_) ::unlink(tmp_.c_str());
  }
  Staged(const Staged&) = delete;
  Staged& operator=(const Staged&) = delete;

  void commit(const std::string& unchanged) {
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      fail("cannot write '" + path_ + "': rename failed: " + os_reason() + " (" + unchanged + ")");
    committed_ = true;
    if (g_write_observer) g_write_observer(path_);
  }
  const std::string& dir() const { return dir_; }

 private:
  // The target's directory, created (with its parents) when missing: save(net, "runs/a.ckpt")
  // works in a fresh folder.
  static std::string dir_of(const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return dir.string();
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
      fail("cannot write '" + path + "': cannot create directory '" + dir.string() +
           "': " + (ec ? ec.message() : std::string("a file of that name is in the way")));
    return dir.string();
  }
  static std::string temp_name(const std::string& path, const std::string& dir) {
    namespace fs = std::filesystem;
    return (fs::path(dir) / ("." + fs::path(path).filename().string() + ".tmp." +
                             std::to_string(::getpid()) + "." + std::to_string(g_tmp_counter++)))
        .string();
  }

  std::string path_, dir_, tmp_;
  UnfinishedWrite unfinished_;  // registered before the file exists
  bool committed_ = false;
};

// The renames are durable once the directories are.
void sync_directory(const std::string& dir) {
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

}  // namespace

void set_write_observer(std::function<void(const std::string& path)> observer) {
  g_write_observer = std::move(observer);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const std::string unchanged = "'" + path + "' is unchanged";
  Staged file(path, bytes, unchanged);
  file.commit(unchanged);
  sync_directory(file.dir());
}

void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string unchanged;
  for (size_t i = 0; i < files.size(); ++i)
    unchanged += (i == 0 ? "'" : i + 1 == files.size() ? "' and '" : "', '") + files[i].first;
  unchanged += files.size() == 1 ? "' is unchanged" : "' are unchanged";
  std::vector<std::unique_ptr<Staged>> staged;
  for (const auto& [path, bytes] : files)
    staged.push_back(std::make_unique<Staged>(path, bytes, unchanged));
  for (size_t i = 0; i < staged.size(); ++i)
    staged[i]->commit(i == 0 ? unchanged : "the files before it are already replaced");
  for (const auto& f : staged) sync_directory(f->dir());
}

const char* discard_unfinished_writes() noexcept {
  const char* last = nullptr;
  for (Unfinished& u : g_unfinished)
    if (u.ready.load() && ::unlink(u.tmp) == 0) last = u.target;  // (renamed already: ENOENT)
  return last;
}

uint32_t crc32_of(const void* data, size_t n, uint32_t crc) {
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    c = ::crc32(c, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
void store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
uint32_t load_le32(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
uint64_t load_le64(const uint8_t* p) { return uint64_t{load_le32(p)} | (uint64_t{load_le32(p + 4)} << 32); }
void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void store_le64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace spora::runtime::data
