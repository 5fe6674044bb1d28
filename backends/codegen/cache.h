// The on-disk kernel cache shared by compile_cpp (shared objects) and nvrtc_build (CUBIN / PTX).
//
// The directory is private to its user: created 0700, and used only when it is a directory
// (not a symbolic link) owned by the user with no group or other permissions. A directory of
// the user's that others may only read or enter is made 0700; one that others may write to,
// or that belongs to someone else, is refused.
//
// Every entry `<name>` has a sidecar `<name>.sha256` holding the SHA-256 of its bytes. An
// entry is used only when it is a regular file of the user's that others cannot write, and
// its bytes have the recorded digest; anything else (a corrupted, truncated or foreign file,
// a missing sidecar) is rebuilt. Files are written to a temporary name in the same directory
// and renamed into place, so no reader sees half a file.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace spora::codegen {

// Creates `dir` (and its parents) and checks that it is private, as above. False with a
// message naming the directory and what is wrong in *error.
bool private_cache_dir(const std::string& dir, std::string* error);

// The default directory when neither SPORA_CACHE_DIR, XDG_CACHE_HOME nor HOME is set:
// <system temp>/spora-<uid>, a directory of this user's only (private_cache_dir checks it).
std::string fallback_cache_dir();

// Writes `bytes` to `file` through a temporary file in the same directory and a rename. False
// when it could not (no partial file is left behind).
bool write_file_atomic(const std::filesystem::path& file, std::string_view bytes);

// A cache entry read and checked against its sidecar digest.
struct CacheEntry {
  // Reads `file` without following a symbolic link; valid when it is a regular file of this
  // user's that others cannot write and (check_digest) its bytes match `file`.sha256.
  explicit CacheEntry(const std::filesystem::path& file, bool check_digest = true);
  bool exists = false;  // there is something under the name (valid or not)
  bool valid = false;
  std::string bytes;  // when valid
};

// Records the digest of `bytes` as the sidecar of `file` (atomically).
bool record_digest(const std::filesystem::path& file, std::string_view bytes);
// The sidecar's name: `file`.sha256.
std::filesystem::path digest_path(const std::filesystem::path& file);

// `text` with every character outside [A-Za-z0-9_] replaced by '_': names from programs as
// they may appear in generated source. Empty text gives "_".
std::string source_identifier(std::string_view text);
// `text` as it may stand in a `//` comment of generated source: printable ASCII only, no
// backslash (a trailing one would continue the comment onto the next line).
std::string source_comment(std::string_view text);

}  // namespace spora::codegen
