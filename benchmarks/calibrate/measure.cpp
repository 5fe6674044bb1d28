// Timing one kernel (measure.h).
#include "benchmarks/calibrate/measure.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "lang/diagnostics.h"
#include "semantics/interpreter.h"
#include "semantics/ir/ir.h"

namespace spora::calibrate {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double time_it(const std::function<void()>& f, double budget) {
  f();  // warm-up
  const auto t0 = Clock::now();
  f();
  const double once = std::max(seconds_since(t0), 1e-7);
  const int reps = std::clamp(static_cast<int>(budget / once), 3, 2000);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t = Clock::now();
    f();
    times.push_back(seconds_since(t));
  }
  return median(times);
}

sem::Tensor random_tensor(DType dtype, sem::Shape shape, std::mt19937& rng) {
  sem::Tensor t = sem::Tensor::zeros(dtype, std::move(shape));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  if (is_float(dtype))
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng));
  if (dtype == DType::boolean)
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, u(rng) > 0 ? 1.0 : 0.0);
  return t;
}

namespace {

// The row's defaults for every attribute the case does not set.
sem::Attrs with_defaults(const sem::Primitive& p, sem::Attrs attrs) {
  for (const sem::ParamSpec& s : p.params)
    if (s.kind == sem::ParamSpec::Kind::Attr && !attrs.has(s.name) && s.default_value)
      attrs.set(s.name, *s.default_value);
  return attrs;
}

// The largest cache of cpu0 in sysfs of level at most `max_level` (0: none listed).
size_t largest_cache(int max_level) {
  size_t largest = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i);
    std::ifstream level(dir + "/level"), size(dir + "/size");
    int l = 0;
    std::string text;
    if (!(level >> l) || !(size >> text) || l > max_level || text.empty()) continue;
    size_t v = std::strtoull(text.c_str(), nullptr, 10);
    if (text.back() == 'K') v <<= 10;
    if (text.back() == 'M') v <<= 20;
    largest = std::max(largest, v);
  }
  return largest;
}

}  // namespace

size_t last_level_cache_bytes() {
  static const size_t bytes = largest_cache(9);
  return bytes;
}

size_t private_cache_bytes() {
  static const size_t bytes = [] {
    size_t largest = largest_cache(2);
    // Virtual machines often have no cache folders in sysfs; the C library reads CPUID.
    if (largest == 0) {
      const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
      if (l2 > 0) largest = static_cast<size_t>(l2);
    }
    return largest > 0 ? largest : size_t{2} << 20;
  }();
  return bytes;
}

size_t copies_for(double distance, size_t input_bytes) {
  if (distance < 0) distance = 2.0 * static_cast<double>(private_cache_bytes());
  const double n = std::round(distance / static_cast<double>(std::max<size_t>(input_bytes, 1)));
  return static_cast<size_t>(std::clamp(n, 1.0, static_cast<double>(kMaxCopies)));
}

Measured measure(const Case& c, double budget, double distance) {
  const sem::Primitive* p = sem::Registry::instance().find(c.prim);
  if (!p) throw lang::InternalError("calibrate: no primitive " + c.prim);
  const sem::Attrs attrs = with_defaults(*p, c.attrs);
  std::vector<sem::TypeP> types;
  size_t input_bytes = 0;
  for (const sem::Value& v : c.inputs) {
    types.push_back(v.kind == sem::Value::Kind::None ? nullptr : v.type());
    if (v.kind == sem::Value::Kind::Tensor) input_bytes += v.tensor.nbytes();
  }
  const size_t copies = copies_for(distance, input_bytes);
  std::vector<std::vector<sem::Value>> sets{c.inputs};
  for (size_t i = 1; i < copies; ++i) {
    std::vector<sem::Value>& set = sets.emplace_back(c.inputs);
    for (sem::Value& v : set)
      if (v.kind == sem::Value::Kind::Tensor) v = sem::Value(v.tensor.clone());
  }
  const sem::RefKernel& kernel = sem::kernel_for(*p);
  Measured m;
  size_t turn = 0;
  m.seconds = time_it([&] { (void)kernel(sets[turn++ % sets.size()], attrs); }, budget);
  const sem::CostRule* rule = p->facet<sem::CostRule>(sem::kCostFacet);
  if (!rule) throw lang::InternalError("calibrate: no cost rule for " + c.prim);
  m.cost = (*rule)(types, p->infer(types, attrs), attrs);
  return m;
}

sem::Attrs attrs_of(std::initializer_list<std::pair<const char*, sem::Attr>> items) {
  sem::Attrs a;
  for (const auto& [k, v] : items) a.set(k, v);
  return a;
}

double interpreter_overhead() {
  ir::Module m;
  ir::Graph* g = m.add_graph("chain");
  const sem::TypeP scalar = sem::Type::scalar(DType::f32);
  ir::Node* x = m.add_param(g, "x", scalar);
  const sem::Primitive* add = sem::Registry::instance().find("add");
  ir::Node* acc = x;
  const int n = 2000;
  for (int i = 0; i < n; ++i) acc = m.add_apply(g, add, {acc, x}, {}, scalar);
  g->output = acc;
  sem::Interpreter interp(m);
  const sem::Value one(sem::Tensor::scalar(DType::f32, 1.0));
  return time_it([&] { (void)interp.call(g, {one}); }, 0.3) / n;
}

}  // namespace spora::calibrate
