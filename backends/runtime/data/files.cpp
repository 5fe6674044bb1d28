// Whole-file reading, atomic writing and CRC32 (see files.h).
#include "backends/runtime/data/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "lang/diagnostics.h"

namespace spora::runtime::data {

namespace {

[[noreturn]] void fail(const std::string& message) { throw lang::UserError(message); }

std::atomic<int64_t> g_fail_after{-1};
std::atomic<int64_t> g_tmp_counter{0};

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

// Reads up to `limit` decompressed bytes of a gzip file.
Bytes read_gzip(const std::string& path, size_t limit) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz) fail("cannot open '" + path + "': " + os_reason());
  gzbuffer(gz, 1 << 17);
  Bytes out;
  constexpr size_t kChunk = 1 << 20;
  while (out.size() < limit) {
    const size_t want = std::min(kChunk, limit - out.size());
    const size_t at = out.size();
    out.resize(at + want);
    const int got = gzread(gz, out.data() + at, static_cast<unsigned>(want));
    if (got < 0) {
      int code = 0;
      std::string why = gzerror(gz, &code);
      gzclose(gz);
      fail("cannot read '" + path + "': corrupt gzip data (" + why + ")");
    }
    out.resize(at + static_cast<size_t>(got));
    if (static_cast<size_t>(got) < want) {
      // End of the stream, or a truncated one: zlib reports the latter at close.
      int code = 0;
      const char* why = gzerror(gz, &code);
      if (code != Z_OK && code != Z_STREAM_END) {
        std::string reason = why;
        gzclose(gz);
        fail("cannot read '" + path + "': corrupt gzip data (" + reason + ")");
      }
      break;
    }
  }
  const int rc = gzclose(gz);
  if (rc == Z_BUF_ERROR && out.size() < limit)
    fail("cannot read '" + path + "': the gzip data is truncated");
  if (rc != Z_OK && rc != Z_BUF_ERROR) fail("cannot read '" + path + "': corrupt gzip data");
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

void write_all(int fd, const char* p, size_t n, const std::string& tmp, int64_t& budget) {
  while (n > 0) {
    size_t chunk = n;
    if (budget >= 0) {
      if (budget == 0) {
        errno = ENOSPC;
        fail("cannot write '" + tmp + "': " + os_reason());
      }
      chunk = std::min<size_t>(chunk, static_cast<size_t>(budget));
    }
    const ssize_t put = ::write(fd, p, chunk);
    if (put < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '" + tmp + "': " + os_reason());
    }
    p += put;
    n -= static_cast<size_t>(put);
    if (budget >= 0) budget -= put;
  }
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
                         uint64_t elem_size, const std::string& path, const std::string& type) {
  const std::optional<uint64_t> data = array_bytes(shape, elem_size);
  if (!data || file_size < offset || file_size - offset < *data)
    fail("'" + path + "' is truncated: its header announces " + type + " (" +
         (data && *data <= UINT64_MAX - offset ? std::to_string(offset + *data) + " bytes"
                                               : std::string("a size past 64 bits")) +
         "), the file has " + std::to_string(file_size) + " bytes");
  return *data;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Bytes read_file(const std::string& path, bool gunzip) {
  if (gunzip && is_gzip(path)) return read_gzip(path, SIZE_MAX);
  return read_plain(path, SIZE_MAX);
}

Bytes read_prefix(const std::string& path, size_t n) {
  if (is_gzip(path)) return read_gzip(path, n);
  return read_plain(path, n);
}

void set_atomic_write_failure_for_testing(int64_t fail_after_bytes) { g_fail_after = fail_after_bytes; }

void write_file_atomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail("cannot write '" + path + "': directory '" + dir.string() + "' does not exist");
  const fs::path tmp = dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()) + "." +
                              std::to_string(g_tmp_counter++));
  const std::string tmp_s = tmp.string();
  int fd = ::open(tmp_s.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot write '" + path + "': " + os_reason());
  try {
    int64_t budget = g_fail_after.load();
    write_all(fd, bytes.data(), bytes.size(), tmp_s, budget);
    if (::fsync(fd) != 0) fail("cannot write '" + path + "': fsync failed: " + os_reason());
    if (::close(fd) != 0) {
      fd = -1;
      fail("cannot write '" + path + "': " + os_reason());
    }
    fd = -1;
    if (::rename(tmp_s.c_str(), path.c_str()) != 0)
      fail("cannot write '" + path + "': rename failed: " + os_reason());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp_s.c_str());
    throw;
  }
  // The rename is durable once the directory is.
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
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
