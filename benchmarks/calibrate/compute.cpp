// `spora calibrate --measure compute`: the compute side of the machine model (calibrate.h),
// printed as lines for the parent process (machine_model.cpp reads them back):
//
//   scalar <key> <value>        peak_f32 peak_f64 memory_bandwidth launch_overhead overhead.<class>
//   gemm <m> <n> <k> <FLOP/s>   one point of the GEMM grid
//   conv <m> <n> <k> <FLOP/s>   one point of the convolution grid (its per-image GEMM)
//   bw <class> <bytes> <B/s>    one point of an op class's bandwidth table
//   distance <bytes>            the reuse distance of the table lines that follow
//
// Each kernel is timed alone (measure.h) on fresh random inputs, the tables at three reuse
// distances of its inputs (`scalar reuse_distance` names the one of the inherited tables,
// sim/measured_tables.h). The program that will be predicted plays no
// part: only these fixed sweeps.
#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "benchmarks/calibrate/calibrate.h"
#include "benchmarks/calibrate/measure.h"

namespace spora::calibrate {

namespace {

using Ints = std::vector<int64_t>;
using sem::Value;

// The dimensions of the GEMM grid (every m x n x k) and of the convolution grid: out channels,
// image side (3x3 kernels, padding 1: P = side^2 output pixels), in channels (K = 9 C). The
// rows and columns step by factors of 2 from 64: there the backend cuts products into blocks
// (backends/cpu/blas.cpp), and the rate between two points 4x apart is not their interpolation
// (AMD EPYC, m = 16, k = 1024: n = 256 at 79 GFLOP/s, 512 at 64, 1024 at 63). The depth is
// never cut and keeps steps of 4.
const std::vector<int64_t> kGemmRowsCols{4, 16, 64, 128, 256, 512, 1024};
const std::vector<int64_t> kGemmDepths{4, 16, 64, 256, 1024};
const std::vector<int64_t> kConvOut{4, 16, 64}, kConvSide{8, 16, 32}, kConvIn{1, 4, 16};
constexpr int64_t kConvImages = 4;

// A kernel's time less its class's fixed cost (never below 5% of the time).
double less_fixed(double seconds, double fixed) {
  return std::max(seconds - fixed, 0.05 * seconds);
}

// A class's bandwidth table: per size, the median over its cases of bytes and of bytes/s, the
// time less the kernel's fixed cost (`tiny`: the same class on one element).
void print_bandwidth(const std::string& cls, const std::vector<std::vector<Measured>>& by_size,
                     double tiny) {
  for (const std::vector<Measured>& cases : by_size) {
    std::vector<double> bytes, rates;
    for (const Measured& m : cases) {
      bytes.push_back(m.cost.bytes);
      rates.push_back(m.cost.bytes / less_fixed(m.seconds, tiny));
    }
    std::printf("bw %s %.9g %.9g\n", cls.c_str(), median(bytes), median(rates));
  }
}

// The GEMM, convolution and bandwidth tables with the kernels' inputs at reuse distance
// `distance` (measure.h); the best GEMM or convolution rate seen raises `peak`.
void print_tables(double distance, std::map<std::string, double>& tiny, std::mt19937& rng,
                  double& peak) {
  auto f32 = [&](sem::Shape s) { return Value(random_tensor(DType::f32, std::move(s), rng)); };
  auto at = [&](const Case& c) { return measure(c, 0.02, distance); };
  std::printf("distance %.9g\n", distance);
  for (const int64_t m : kGemmRowsCols)
    for (const int64_t n : kGemmRowsCols)
      for (const int64_t k : kGemmDepths) {
        const Measured mm = at({"matmul", {f32({m, k}), f32({k, n})}, {}});
        const double rate = mm.cost.flops / less_fixed(mm.seconds, tiny["matmul"]);
        peak = std::max(peak, rate);
        std::printf("gemm %lld %lld %lld %.9g\n", static_cast<long long>(m),
                    static_cast<long long>(n), static_cast<long long>(k), rate);
      }
  // conv2d and its two derivative helpers on the same geometries, each keyed by the GEMM its
  // kernel runs per image (ops/conv.cpp's cost rules) into its own table.
  for (const int64_t o : kConvOut)
    for (const int64_t side : kConvSide)
      for (const int64_t c : kConvIn) {
        const Value x = f32({kConvImages, c, side, side}), w = f32({o, c, 3, 3});
        const Value dy = f32({kConvImages, o, side, side});  // padding 1: as large as x
        const Ints x_shape{kConvImages, c, side, side}, w_shape{o, c, 3, 3};
        const Case cases[] = {
            {"conv2d", {x, w, Value()}, attrs_of({{"padding", Ints{1}}})},
            {"conv2d_input_grad", {dy, w}, attrs_of({{"padding", Ints{1}}, {"shape", x_shape}})},
            {"conv2d_weight_grad", {x, dy}, attrs_of({{"padding", Ints{1}}, {"shape", w_shape}})}};
        for (const Case& cs : cases) {
          const Measured cv = at(cs);
          const double rate = cv.cost.flops / less_fixed(cv.seconds, tiny["conv"]);
          peak = std::max(peak, rate);
          std::printf("%s %g %g %g %.9g\n", cv.cost.table.empty() ? "conv" : cv.cost.table.c_str(),
                      cv.cost.gemm[0], cv.cost.gemm[1], cv.cost.gemm[2], rate);
        }
      }

  // Bandwidth tables, per class and size (elements per case).
  std::map<std::string, std::vector<std::vector<Measured>>> sweep;
  for (const int64_t n : {int64_t{1} << 8, int64_t{1} << 11, int64_t{1} << 14, int64_t{1} << 17,
                          int64_t{1} << 20, int64_t{1} << 22}) {
    std::vector<Measured>& e = sweep["elementwise"].emplace_back();
    for (const char* op : {"add", "mul", "gt"}) e.push_back(at({op, {f32({n}), f32({n})}, {}}));
    for (const char* op : {"relu", "exp", "tanh"}) e.push_back(at({op, {f32({n})}, {}}));
    const Value mask(random_tensor(DType::boolean, {n}, rng));  // the vjp of relu
    e.push_back(at({"where", {mask, f32({n}), Value(sem::Tensor::scalar(DType::f32, 0.0))}, {}}));
    std::vector<Measured>& z = sweep["creation"].emplace_back();
    z.push_back(at({"zeros", {}, attrs_of({{"shape", Ints{n}}})}));
  }
  for (const int64_t n :
       {int64_t{1} << 11, int64_t{1} << 14, int64_t{1} << 17, int64_t{1} << 20, int64_t{1} << 22}) {
    const sem::Shape rows{n / 256, 256}, cols{256, n / 256};
    std::vector<Measured>& r = sweep["reduction"].emplace_back();
    std::vector<Measured>& nm = sweep["norm"].emplace_back();
    std::vector<Measured>& cp = sweep["copy"].emplace_back();
    std::vector<Measured>& tr = sweep["transpose"].emplace_back();
    for (const sem::Shape& s : {rows, cols}) {
      r.push_back(at({"sum", {f32(s)}, attrs_of({{"axis", Ints{0}}})}));
      r.push_back(at({"sum", {f32(s)}, attrs_of({{"axis", Ints{1}}})}));
      r.push_back(at({"max", {f32(s)}, attrs_of({{"axis", Ints{1}}})}));
      tr.push_back(at({"permute", {f32(s)}, attrs_of({{"axes", Ints{1, 0}}})}));
    }
    // Tensors of rank 3 and 4 as models hold them ([batch, tokens, features], [batch, heads,
    // tokens, head features]): the sum over the batch (a weight gradient's), over the features
    // with keepdims (a softmax's); the permute of attention's heads (contiguous runs: the copy
    // class) and a batched transpose (single elements: the transpose table, with the matrix
    // transposes above).
    const sem::Shape b3{8, n / 8 / 64, 64}, b4{8, 4, n / 8 / 4 / 64, 64};
    r.push_back(at({"sum", {f32(b3)}, attrs_of({{"axis", Ints{0}}, {"keepdims", true}})}));
    r.push_back(at({"sum", {f32(b4)}, attrs_of({{"axis", Ints{3}}, {"keepdims", true}})}));
    tr.push_back(at({"permute", {f32(b3)}, attrs_of({{"axes", Ints{0, 2, 1}}})}));
    cp.push_back(at({"permute", {f32(b4)}, attrs_of({{"axes", Ints{0, 2, 1, 3}}})}));
    nm.push_back(at({"softmax", {f32(rows)}, {}}));
    nm.push_back(at({"layer_norm", {f32(rows), Value(), Value()}, {}}));
    nm.push_back(
        at({"cross_entropy", {f32(rows), Value(sem::Tensor::zeros(DType::i32, {n / 256}))}, {}}));
  }
  // Pooling, and the gradient helpers' own table (pool_grad: they fill the input-shaped
  // gradient and scatter into it), both less the forward's fixed cost, which the cost model adds
  // back as the pool class's launch overhead.
  for (const int64_t images : {1, 8, 64, 512}) {
    const Value x = f32({images, 4, 32, 32}), g = f32({images, 4, 16, 16});
    sweep["pool"].emplace_back().push_back(
        at({"max_pool2d", {x}, attrs_of({{"kernel", Ints{2}}})}));
    sweep["pool_grad"].emplace_back().push_back(
        at({"max_pool2d_grad", {x, g}, attrs_of({{"kernel", Ints{2}}})}));
  }

  for (const auto& [cls, by_size] : sweep)
    print_bandwidth(cls, by_size,
                    tiny.at(cls == "pool_grad"   ? std::string("pool")
                            : cls == "transpose" ? std::string("copy")
                                                 : cls));
}

}  // namespace

int measure_compute() {
  std::mt19937 rng(7);
  auto f32 = [&](sem::Shape s) { return Value(random_tensor(DType::f32, std::move(s), rng)); };
  double peak = 0;

  // Fixed costs: tiny ops of each class against a tiny add (whose cost is in the interpreter's
  // time per node already). The tables are of the kernels' time beyond their class's fixed cost,
  // which the cost model adds back as the launch overhead. Each on the same inputs every call
  // (reuse distance 0): the fixed cost alone.
  auto tiny_op = [](const Case& c) { return measure(c, 0.02, 0).seconds; };
  const double tiny_add = tiny_op({"add", {f32({1}), f32({1})}, {}});
  std::map<std::string, double> tiny{{"elementwise", tiny_add}};
  tiny["matmul"] = tiny_op({"matmul", {f32({1, 1}), f32({1, 1})}, {}});
  tiny["conv"] = tiny_op({"conv2d", {f32({1, 1, 1, 1}), f32({1, 1, 1, 1}), Value()}, {}});
  tiny["reduction"] = tiny_op({"sum", {f32({1})}, {}});
  tiny["norm"] = tiny_op({"softmax", {f32({1, 1})}, {}});
  tiny["pool"] = tiny_op({"max_pool2d", {f32({1, 1, 2, 2})}, attrs_of({{"kernel", Ints{2}}})});
  tiny["copy"] = tiny_op({"permute", {f32({1, 1})}, attrs_of({{"axes", Ints{1, 0}}})});
  tiny["creation"] = tiny_op({"zeros", {}, attrs_of({{"shape", Ints{1}}})});
  const double interp = interpreter_overhead();

  // The reuse distances: the same inputs every call (the core's own caches), twice the private
  // caches (the shared cache: the inherited tables), 32 times them (memory on most CPUs), and
  // twice the last-level cache where that is further (memory where the shared cache holds
  // 32 times the private ones: an AMD EPYC's 32 MiB L3 against its 512 KiB L2).
  const double base = 2.0 * static_cast<double>(private_cache_bytes());
  std::printf("scalar reuse_distance %.9g\n", base);
  std::vector<double> distances{base, 0.0, 16 * base};
  const double memory = 2.0 * static_cast<double>(last_level_cache_bytes());
  if (memory > 16 * base) distances.push_back(memory);
  for (const double distance : distances) {
    double best = 0;
    print_tables(distance, tiny, rng, best);
    if (distance == base) peak = best;
  }
  const Value a64(random_tensor(DType::f64, {512, 512}, rng));
  const Measured mm64 = measure({"matmul", {a64, a64}, {}});

  // Memory bandwidth: adds and multiplies of 4 MiB arrays (the roofline's memory side for the
  // classes without a table, and the copies of the communication model).
  double bandwidth = 0;
  for (const char* op : {"add", "mul"}) {
    const Measured e = measure({op, {f32({1 << 20}), f32({1 << 20})}, {}}, 0.1);
    bandwidth = std::max(bandwidth, e.cost.bytes / e.seconds);
  }
  std::printf("scalar peak_f32 %.9g\n", peak);
  std::printf("scalar peak_f64 %.9g\n", mm64.cost.flops / mm64.seconds);
  std::printf("scalar memory_bandwidth %.9g\n", bandwidth);
  std::printf("scalar launch_overhead %.9g\n", interp);
  for (const auto& [cls, t] : tiny)
    std::printf("scalar overhead.%s %.9g\n", cls.c_str(), interp + std::max(0.0, t - tiny_add));
  return 0;
}

}  // namespace spora::calibrate
