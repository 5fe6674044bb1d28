// Which library runs an f32 GEMM block (blas.cpp): OpenBLAS or oneDNN, chosen per shape by
// measurement and remembered on disk, as cuDNN's benchmark mode picks convolution algorithms.
//
// blas.cpp cuts every product into blocks that depend on its shape only and runs each block as
// one single-threaded library call. For a block shape (transposes, m, n, k, leading dimensions)
// the first use in a process looks the shape up in the choice file; a shape it does not hold is
// timed there and then, both libraries on that block's own operands, single-threaded,
// alternating, and the faster best time wins; the file is rewritten with it. A choice timed
// while other processes wanted the processors (machine_oversubscribed, kernels.h, when the
// timing began or ended) is written marked busy: it stands while the machine stays busy, so the
// processes of a run and the runs after it agree, and the first process that meets the shape on
// a quiet machine times it again and replaces it. The block's own
// operands, not scratch copies: oneDNN's time depends on where they lie (W4's [1024, 256] x
// [256, 128-of-1024] block took 6.5 or 11.5 ms by the operands' addresses; OpenBLAS 6.4). Products
// under kGemmTunedWork multiply-adds are not timed and run in OpenBLAS (a call costs microseconds;
// timing it would cost more than it saves). f64 always runs in OpenBLAS (oneDNN has no f64 GEMM).
//
// SPORA_GEMM=openblas | onednn | auto (the default where Spora is built with oneDNN) pins the
// library. SPORA_GEMM_CHOICES names the choice file (default
// $XDG_CACHE_HOME/spora/gemm-choices.tsv, else ~/.cache/spora/gemm-choices.tsv); `off` keeps
// the choices in memory only.
//
// The file is text: a header line naming the machine (CPU model, instruction set, OpenBLAS's
// kernels and oneDNN's version), then one line per shape. A file with another header (a
// different machine or library), or one that does not parse, is ignored and rewritten: stale or
// corrupt choices are measured again, never trusted and never fatal. Writes go to a temporary
// file renamed into place, so no reader sees half a file.
//
// Within one process a shape's choice never changes, so results stay independent of the number
// of threads (blas.h). Two processes may choose differently for a shape neither found in the
// file; the libraries agree to f32 rounding.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spora::cpu {

enum class GemmLib : uint8_t { openblas, onednn };
const char* gemm_lib_name(GemmLib lib);
// Whether this build links oneDNN.
bool have_onednn();

enum class GemmPolicy { openblas, onednn, autotune };
// SPORA_GEMM, read at first use (autotune without it; openblas without oneDNN). An unknown
// value is an error naming the accepted ones (std::invalid_argument).
GemmPolicy gemm_policy();
// Tests and benchmarks: another policy for the following calls; returns the previous one.
GemmPolicy set_gemm_policy(GemmPolicy p);

// A single-threaded f32 GEMM block: C[m,n] = op(A) op(B) with A m x k (k x m when ta), and
// the leading dimensions of the operands (a block of a wider product reads strided rows, which
// changes which library is faster: a [1024, 128] block of a [1024, 1024] output ran 1.7x slower
// in oneDNN than timed with contiguous operands).
struct GemmShape {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool operator<(const GemmShape& o) const;
  bool operator==(const GemmShape& o) const;
};

// Products below this many multiply-adds run in OpenBLAS without being timed.
constexpr int64_t kGemmTunedWork = int64_t{1} << 16;

// The library for one block under the current policy. On a shape's first use under autotune,
// trial(lib) runs the block once with lib (writing where the block's result goes, so the call
// after the choice overwrites it), and its times decide.
GemmLib choose_gemm(const GemmShape& s, const std::function<void(GemmLib)>& trial);

// One line of the choice file: the shape, the winner, the two best times in microseconds and
// whether the machine was busy while they were taken.
struct GemmChoice {
  GemmShape shape;
  GemmLib lib = GemmLib::openblas;
  double openblas_us = 0, onednn_us = 0;
  bool busy = false;
  bool settled = false;  // used in this process (not in the file): its choice stays here
};

// This machine's header line (without the newline).
std::string gemm_choice_header();
// The file's text for `choices` under `header`.
std::string format_gemm_choices(std::string_view header, const std::vector<GemmChoice>& choices);
// The choices of a file's text; nullopt when its header is not `header` or any line is
// malformed (error, when given, says which line and why). Never throws.
std::optional<std::vector<GemmChoice>> parse_gemm_choices(std::string_view text,
                                                          std::string_view header,
                                                          std::string* error = nullptr);

// The choice file's path ("" with SPORA_GEMM_CHOICES=off).
std::string gemm_choice_path();
// Tests: forgets the choices held in memory, and reads the file again at the next use.
void reset_gemm_choices();
// Tests: what tells whether the machine is busy (machine_oversubscribed by default; empty:
// never busy); returns the previous probe.
std::function<bool()> set_gemm_busy_probe(std::function<bool()> probe);
// The choices made or loaded in this process, in shape order.
std::vector<GemmChoice> gemm_choices();

// oneDNN's single-threaded sgemm (row-major, like gemm in blas.h); false without oneDNN.
bool onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace spora::cpu
