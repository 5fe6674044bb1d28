// The private on-disk kernel cache (cache.h).
#include "backends/codegen/cache.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "backends/codegen/hash.h"

namespace spora::codegen {

namespace fs = std::filesystem;

namespace {

bool read_all(int fd, std::string* out) {
  out->clear();
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    out->append(buffer, static_cast<size_t>(n));
  }
}

// Opens `file` for reading without following a symbolic link. The descriptor when it is a
// regular file of this user's that group and others cannot write, else -1 (*exists says
// whether there was anything under the name).
int open_own_file(const fs::path& file, bool* exists) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (exists) *exists = fd >= 0 || errno != ENOENT;
  if (fd < 0) return -1;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH))) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool private_cache_dir(const std::string& dir, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error)
      *error = fmt::format(
          "the kernel cache directory '{}' {}; set SPORA_CACHE_DIR to a directory of your own", dir,
          why);
    return false;
  };
  if (dir.empty()) return fail("is empty");
  fs::path path = fs::path(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "a/b/" -> "a/b"
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(fmt::format("cannot be created ({})", std::strerror(errno)));
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return fail(fmt::format("cannot be read ({})", std::strerror(errno)));
  if (S_ISLNK(st.st_mode)) return fail("is a symbolic link");
  if (!S_ISDIR(st.st_mode)) return fail("is not a directory");
  // The checks and the chmod go through one descriptor, so the directory cannot be swapped
  // for another in between.
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return fail(fmt::format("cannot be opened ({})", std::strerror(errno)));
  std::string why;
  if (::fstat(fd, &st) != 0)
    why = fmt::format("cannot be read ({})", std::strerror(errno));
  else if (st.st_uid != ::geteuid())
    why = fmt::format("belongs to uid {}, not to this user (uid {})", st.st_uid, ::geteuid());
  else if (st.st_mode & (S_IWGRP | S_IWOTH))
    why = fmt::format("may be written by others (mode {:04o}, must be 0700)", st.st_mode & 07777);
  else if ((st.st_mode & 077) && ::fchmod(fd, 0700) != 0)
    why = fmt::format("cannot be made private (mode {:04o}: {})", st.st_mode & 07777,
                      std::strerror(errno));
  ::close(fd);
  return why.empty() ? true : fail(why);
}

std::string fallback_cache_dir() {
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec || tmp.empty()) tmp = "/tmp";
  return (tmp / fmt::format("spora-{}", ::geteuid())).string();
}

bool write_file_atomic(const fs::path& file, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  const fs::path tmp = fmt::format("{}.{}.{}.tmp", file.string(), ::getpid(), counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  bool ok = true;
  for (size_t at = 0; ok && at < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) at += static_cast<size_t>(n);
  }
  ok = ::close(fd) == 0 && ok;
  if (ok) ok = ::rename(tmp.c_str(), file.c_str()) == 0;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

fs::path digest_path(const fs::path& file) { return file.string() + ".sha256"; }

bool record_digest(const fs::path& file, std::string_view bytes) {
  return write_file_atomic(digest_path(file), sha256_hex(bytes) + "\n");
}

CacheEntry::CacheEntry(const fs::path& file, bool check_digest) {
  const int fd = open_own_file(file, &exists);
  if (fd < 0) return;
  valid = read_all(fd, &bytes);
  ::close(fd);
  if (valid && check_digest) {
    std::string digest;
    const int sidecar = open_own_file(digest_path(file), nullptr);
    valid = sidecar >= 0 && read_all(sidecar, &digest) && digest.size() >= 64 &&
            digest.compare(0, 64, sha256_hex(bytes)) == 0 &&
            digest.find_first_not_of('\n', 64) == std::string::npos;
    if (sidecar >= 0) ::close(sidecar);
  }
  if (!valid) bytes.clear();
}

std::string source_identifier(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out += ok ? c : '_';
  }
  return out.empty() ? "_" : out;
}

std::string source_comment(std::string_view text) {
  std::string out;
  for (char c : text) out += c >= ' ' && c <= '~' && c != '\\' ? c : '_';
  return out;
}

}  // namespace spora::codegen
