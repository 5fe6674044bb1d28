// Whole-file reading (plain or gzip), atomic writing and CRC32: what every data format of
// backends/runtime/data/ builds on.
//
// Errors are lang::UserError naming the path and the OS reason:
//   cannot open 'x.npy': No such file or directory
// Atomic write (write_file_atomic): the target's directory is created when missing (with its
// parents); the bytes go to a temporary file in the same directory
// (`.<name>.tmp.<pid>.<n>`), which is fsync'ed, renamed over the target and the directory
// fsync'ed; on any failure the temporary file is removed and the old target is left intact:
//   cannot write 'x.ckpt': No space left on device (4096 of 10000 bytes written; 'x.ckpt' is
//   unchanged)
// A signal handler removes the temporary files of writes in progress with
// discard_unfinished_writes() (backends/runtime/signals.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spora::runtime::data {

using Bytes = std::vector<uint8_t>;

// The whole file. `gunzip`: a gzip file is decompressed (a plain file is read as is);
// *was_gzip tells which. A damaged gzip stream is an error naming the file's byte:
//   'x.gz' is corrupt at byte 1234: invalid distance too far back (gzip data, after 5000
//   decompressed bytes) 'x.gz' is truncated at byte 4000: its gzip stream ends there, after ...
//   decompressed bytes, before its end
Bytes read_file(const std::string& path, bool gunzip = false, bool* was_gzip = nullptr);
// At most `n` leading bytes (decompressed when the file is gzip): headers at compile time.
Bytes read_prefix(const std::string& path, size_t n, bool* was_gzip = nullptr);
// "at byte 136", or "at byte 136 of its decompressed data" for a gzip file: where a reader's
// error is, in the data it parses.
std::string at_byte(uint64_t offset, bool gz);
bool file_exists(const std::string& path);

// Writes `bytes` to `path` atomically (see above). Test hook: when fail_after_bytes >= 0 the
// write fails (a UserError, like a full disk) after that many bytes reached the temporary file.
void write_file_atomic(const std::string& path, std::string_view bytes);
// Several files as one: every temporary file is written before any is renamed, so a failure
// (a full disk) leaves all of them as they were ("... ('a.csv' and 'a.svg' are unchanged)").
void write_files_atomic(const std::vector<std::pair<std::string, std::string>>& files);
void set_atomic_write_failure_for_testing(int64_t fail_after_bytes);
// Called with the target of every atomic write once it is in place (on the writing thread;
// nullptr: none). The Jupyter kernel shows the plots a cell wrote (tools/cmd_repl.cpp).
void set_write_observer(std::function<void(const std::string& path)> observer);
// (Another test hook: SPORA_TEST_SLOW_WRITES=<ms> pauses every atomic write that long after half
// its bytes, so that a test can signal a process in the middle of a write.)
// Removes the temporary file of every write_file_atomic in progress and returns the target of
// one of them (nullptr when none). Async-signal-safe: for a signal handler that ends the process.
const char* discard_unfinished_writes() noexcept;

// CRC-32 (zlib's, the one of gzip and PNG) of the bytes, continuing from `crc`.
uint32_t crc32_of(const void* data, size_t n, uint32_t crc = 0);

// Big- and little-endian integers.
uint32_t load_be32(const uint8_t* p);
void store_be32(uint8_t* p, uint32_t v);
uint32_t load_le32(const uint8_t* p);
uint64_t load_le64(const uint8_t* p);
void store_le32(uint8_t* p, uint32_t v);
void store_le64(uint8_t* p, uint64_t v);

// The bytes of a row-major array of `shape` with elements of `elem_size` bytes; nullopt when a
// dimension is negative or the size or a partial element count does not fit 64 bits (a header
// that announces more than any file holds). Readers compare it with the file's size before allocating anything.
std::optional<uint64_t> array_bytes(const std::vector<int64_t>& shape, uint64_t elem_size);
// The bytes of the array a header announces when a file of `file_size` bytes holds exactly
// them after `offset`; else a UserError "'x.npy' is truncated at byte 40: its header announces
// f32[2,3] (48 bytes)" or "'x.npy' is corrupt at byte 48: 4 bytes follow the f32[2,3] data its
// header announces" (`type`: the announced type as people read it; `gz`: see at_byte).
uint64_t announced_bytes(size_t file_size, size_t offset, const std::vector<int64_t>& shape,
                         uint64_t elem_size, const std::string& path, const std::string& type,
                         bool gz = false);
// "No such file or directory" for the current errno.
std::string os_reason();

}  // namespace spora::runtime::data
