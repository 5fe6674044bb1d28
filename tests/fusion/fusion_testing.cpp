// Helpers of the fusion tests (fusion_testing.h).
#include "tests/fusion/fusion_testing.h"

#include <cmath>
#include <regex>
#include <sstream>

#include "autodiff/install.h"
#include "backends/cpu/cpu.h"
#include "backends/runtime/runtime.h"
#include "ops/ops.h"
#include "semantics/interpreter.h"
#include "semantics/passes/fusion.h"
#include "semantics/passes/pipeline.h"
#include "semantics/pipeline.h"
#include "semantics/rng.h"

namespace spora::fusion_testing {

void setup() {
  static bool done = [] {
    ops::register_all();
    autodiff::install();
    runtime::install();
    cpu::register_kernels();
    return true;
  }();
  (void)done;
}

codegen::CompileOptions test_compile_options() {
  codegen::CompileOptions o = codegen::default_compile_options();
  o.cache_dir = std::string(SPORA_BINARY_DIR) + "/fusion-kernel-cache";
  o.flags = "-std=c++17 -O2 -march=native -fopenmp -fPIC -shared -fno-math-errno -fno-trapping-math -w";
  return o;
}

codegen::FusedOptions test_fused_options() {
  codegen::FusedOptions o;
  o.compile = test_compile_options();
  o.min_elements = 0;
  return o;
}

std::unique_ptr<ir::Module> compile(const std::string& path, std::string* diagnostics,
                                    const std::string& entry,
                                    const std::function<void(ir::Module&)>& before_optimize) {
  setup();
  lang::SourceManager sources;
  lang::DiagnosticEngine diags(sources);
  sem::Compiled c = sem::compile_file(sources, diags, path);
  if (!c.module) {
    std::ostringstream os;
    diags.print(os);
    if (diagnostics) *diagnostics = os.str();
    return nullptr;
  }
  if (before_optimize) before_optimize(*c.module);
  if (!entry.empty()) {
    c.module->entry = c.module->find_graph(entry);
    if (!c.module->entry) {
      if (diagnostics) *diagnostics = "no graph @" + entry;
      return nullptr;
    }
  }
  passes::optimize(*c.module);
  return std::move(c.module);
}

ProgramRun call(const ir::Module& m, const ir::Graph* g, std::vector<sem::Value> args) {
  ProgramRun r;
  std::ostringstream printed;
  ops::set_print_stream(&printed);
  try {
    sem::Interpreter interp(m);
    r.result = interp.call(g, std::move(args));
  } catch (const lang::UserError& e) {
    r.error = e.what();
  }
  ops::set_print_stream(nullptr);
  r.printed = printed.str();
  return r;
}

ProgramRun run_entry(const ir::Module& m) { return call(m, m.entry, {}); }

namespace {

bool close(double a, double b, double rel, double abs_floor) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= rel * std::fabs(b) + abs_floor;
}

}  // namespace

std::string compare(const sem::Value& a, const sem::Value& b, double rel, double abs_floor,
                    double scale_rel) {
  if (a.kind != b.kind) return "values of different kinds";
  switch (a.kind) {
    case sem::Value::Kind::Tensor: {
      const sem::Tensor &x = a.tensor, &y = b.tensor;
      if (x.dtype() != y.dtype() || x.shape() != y.shape())
        return "tensor types differ: " + x.type()->str() + " vs " + y.type()->str();
      const bool exact = !is_float(x.dtype());
      double largest = 0;
      for (int64_t i = 0; i < y.numel(); ++i)
        if (std::isfinite(y.get(i))) largest = std::max(largest, std::fabs(y.get(i)));
      const double floor = abs_floor + scale_rel * largest;
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double u = x.get(i), v = y.get(i);
        if (exact ? u != v : !close(u, v, rel, floor)) {
          std::ostringstream os;
          os.precision(9);
          os << "element " << i << " of " << x.type()->str() << ": " << u << " vs " << v;
          return os.str();
        }
      }
      return "";
    }
    case sem::Value::Kind::Tuple:
    case sem::Value::Kind::Record: {
      if (a.items().size() != b.items().size()) return "tuples of different sizes";
      for (size_t k = 0; k < a.items().size(); ++k) {
        std::string d = compare(a.items()[k], b.items()[k], rel, abs_floor, scale_rel);
        if (!d.empty()) return "item " + std::to_string(k) + ": " + d;
      }
      return "";
    }
    case sem::Value::Kind::String:
      return a.str == b.str ? "" : "strings differ";
    default:
      return "";
  }
}

std::string compare_printed(const std::string& a, const std::string& b, double rel,
                            double abs_floor) {
  static const std::regex number(R"([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|nan|inf)");
  auto split = [&](const std::string& s, std::vector<std::string>& text, std::vector<double>& nums) {
    size_t last = 0;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), number); it != std::sregex_iterator();
         ++it) {
      text.push_back(s.substr(last, static_cast<size_t>(it->position()) - last));
      const std::string t = it->str();
      nums.push_back(t == "nan" ? NAN : t == "inf" ? INFINITY : std::stod(t));
      last = static_cast<size_t>(it->position() + it->length());
    }
    text.push_back(s.substr(last));
  };
  std::vector<std::string> ta, tb;
  std::vector<double> na, nb;
  split(a, ta, na);
  split(b, tb, nb);
  if (ta != tb || na.size() != nb.size()) return "printed texts differ:\n" + a + "\nvs\n" + b;
  for (size_t i = 0; i < na.size(); ++i)
    if (!close(na[i], nb[i], rel, abs_floor)) {
      std::ostringstream os;
      os.precision(9);
      os << "printed number " << i << ": " << na[i] << " vs " << nb[i];
      return os.str();
    }
  return "";
}

sem::Value random_value(const sem::TypeP& t, uint64_t seed, bool positive) {
  if (t->kind == sem::Type::Kind::Tuple) {
    std::vector<sem::Value> items;
    for (size_t k = 0; k < t->elems.size(); ++k)
      items.push_back(random_value(t->elems[k], seed + k, positive));
    return sem::Value::tuple(std::move(items));
  }
  sem::Tensor x = sem::Tensor::empty(t->dtype, t->shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const uint64_t k = static_cast<uint64_t>(i);
    if (is_float(t->dtype))
      x.set(i, positive ? 0.5 + sem::rng::uniform01(seed, k) : sem::rng::normal01(seed, k));
    else
      x.set(i, sem::rng::uniform01(seed, k) < 0.5 ? 0 : 1);
  }
  return x;
}

std::string check_groups(const ir::Module& m, codegen::FusedRuntime& rt, size_t* checked) {
  size_t n = 0;
  uint64_t seed = 1;
  for (const auto& g : m.graphs()) {
    if (!passes::is_fused_graph(*g)) continue;
    std::vector<sem::Value> args;
    for (const ir::Node* p : g->params) args.push_back(random_value(p->type, seed++, true));
    // Node by node first: the kernel may then overwrite an argument it reads at each
    // element's own index, as the interpreter lets it for a last use (args holds the only
    // reference).
    ProgramRun ref = call(m, g.get(), args);  // the interpreter's hook is the runtime: run unhooked
    if (!ref.error.empty()) return "@" + g->name + " node by node: " + ref.error;
    sem::Value fused;
    if (!rt.run(*g, args, fused)) return "@" + g->name + " has no kernel, or its kernel failed";
    std::string d = compare(fused, ref.result, 1e-5, 1e-6, 1e-5);
    if (!d.empty()) return "@" + g->name + ": " + d;
    ++n;
  }
  if (checked) *checked = n;
  return "";
}

}  // namespace spora::fusion_testing
