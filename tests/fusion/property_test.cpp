// Property test: 500 random graphs of elementwise, broadcast, injective and reduction ops (a
// seeded generator) compute the same values fused as unfused (relative 1e-5), and every fusion
// group of them has a loop nest. All kernels are compiled together, once (and cached).
#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "semantics/ir/printer.h"
#include "semantics/ir/verifier.h"
#include "semantics/passes/fusion.h"
#include "semantics/registry.h"
#include "tests/fusion/fusion_testing.h"

namespace spora::fusion_testing {
namespace {

using ir::Node;

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  std::unique_ptr<ir::Module> make() {
    auto m = std::make_unique<ir::Module>();
    g_ = m->add_graph("main");
    m->entry = g_;
    m_ = m.get();
    values_.clear();
    dtype_ = pick(4) == 0 ? DType::f64 : DType::f32;
    // The base shape: rank 1 to 3, small dims (1 included: broadcasting).
    static const int64_t dims[] = {1, 2, 3, 4, 5, 7, 8, 16, 33};
    const int rank = 1 + pick(3);
    for (int i = 0; i < rank; ++i) base_.push_back(dims[pick(9)]);
    const int params = 1 + pick(3);
    for (int i = 0; i < params; ++i) {
      sem::Shape s = base_;
      if (i > 0 && pick(2)) s = broadcast_variant(s);
      values_.push_back(m->add_param(g_, "x" + std::to_string(i), sem::Type::tensor(dtype_, s)));
    }
    const int ops = 3 + pick(12);
    for (int i = 0; i < ops; ++i) step();
    // Outputs: the last value and one or two others.
    std::vector<Node*> outs{values_.back()};
    for (int k = pick(3); k > 0; --k) {
      Node* v = values_[static_cast<size_t>(pick(static_cast<int>(values_.size())))];
      if (!v->is_param() && std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
    }
    std::vector<sem::TypeP> types;
    for (Node* o : outs) types.push_back(o->type);
    g_->output = outs.size() == 1 ? outs[0] : apply("make_tuple", outs, {}, false);
    base_.clear();
    return m;
  }

 private:
  std::mt19937_64 rng_;
  ir::Module* m_ = nullptr;
  ir::Graph* g_ = nullptr;
  std::vector<Node*> values_;
  sem::Shape base_;
  DType dtype_ = DType::f32;

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }

  sem::Shape broadcast_variant(sem::Shape s) {
    for (int64_t& d : s)
      if (pick(2)) d = 1;
    if (pick(3) == 0 && s.size() > 1) s.erase(s.begin());
    return s;
  }

  Node* apply(const std::string& prim, std::vector<Node*> in, sem::Attrs a, bool keep = true) {
    Node* n = m_->add_apply(g_, sem::Registry::instance().find(prim), std::move(in), std::move(a),
                            nullptr);
    if (keep) values_.push_back(n);
    return n;
  }
  Node* constant(double v) {
    return m_->add_constant(g_, sem::Tensor::scalar(dtype_, v));
  }
  Node* any() { return values_[static_cast<size_t>(pick(static_cast<int>(values_.size())))]; }
  Node* recent() {
    const int n = static_cast<int>(values_.size());
    return values_[static_cast<size_t>(n - 1 - pick(std::min(n, 3)))];
  }
  // A value that broadcasts with x (tries a few).
  Node* partner(Node* x) {
    for (int t = 0; t < 6; ++t) {
      Node* y = any();
      if (broadcastable(x->type->shape, y->type->shape)) return y;
    }
    return x;
  }
  static bool broadcastable(const sem::Shape& a, const sem::Shape& b) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      const int64_t x = a[a.size() - 1 - i], y = b[b.size() - 1 - i];
      if (x != y && x != 1 && y != 1) return false;
    }
    return true;
  }
  static bool broadcasts_to(const sem::Shape& from, const sem::Shape& to) {
    if (from.size() > to.size()) return false;
    for (size_t i = 0; i < from.size(); ++i) {
      const int64_t x = from[from.size() - 1 - i], y = to[to.size() - 1 - i];
      if (x != y && x != 1) return false;
    }
    return true;
  }
  static sem::Attrs attrs(std::initializer_list<std::pair<const char*, sem::Attr>> kv) {
    sem::Attrs a;
    for (const auto& [k, v] : kv) a.set(k, v);
    return a;
  }

  void step() {
    Node* x = recent();
    const int rank = static_cast<int>(x->type->shape.size());
    switch (pick(14)) {
      case 0:
      case 1: {
        static const char* unary[] = {"exp",  "tanh", "gelu", "relu",    "neg",  "abs",
                                      "sigmoid", "erf", "square", "sin", "floor", "sign"};
        apply(unary[pick(12)], {x}, {});
        break;
      }
      case 2: {  // log and sqrt of a positive value
        Node* pos = apply("add", {apply("abs", {x}, {}), constant(0.5)}, {});
        apply(pick(2) ? "log" : "sqrt", {pos}, {});
        break;
      }
      case 3:
      case 4:
      case 5: {
        static const char* binary[] = {"add", "sub", "mul", "maximum", "minimum", "div"};
        const int op = pick(6);
        Node* y = pick(4) == 0 ? constant(1.0 + pick(5) * 0.25) : partner(x);
        if (op == 5) y = apply("add", {apply("abs", {y}, {}), constant(1.0)}, {});
        apply(binary[op], {x, y}, {});
        break;
      }
      case 6: {
        Node* y = partner(x);
        Node* c = apply(pick(2) ? "gt" : "le", {x, y}, {}, false);
        apply("where", {c, x, y}, {});
        break;
      }
      case 7:
      case 8: {
        static const char* red[] = {"sum", "mean", "max", "min"};
        std::vector<int64_t> axes;
        for (int a = 0; a < rank; ++a)
          if (pick(2)) axes.push_back(a);
        sem::Attr axis = axes.empty() || pick(4) == 0 ? sem::Attr{} : sem::Attr{axes};
        apply(red[pick(4)], {x}, attrs({{"axis", axis}, {"keepdims", sem::Attr{pick(2) == 0}}}));
        break;
      }
      case 9: {
        if (rank == 0) break;
        static const char* row[] = {"softmax", "log_softmax"};
        apply(row[pick(2)], {x}, attrs({{"axis", sem::Attr{int64_t{-1 - pick(rank)}}}}));
        break;
      }
      case 10: {
        if (rank == 0) break;
        apply("layer_norm", {x}, attrs({{"ndim", sem::Attr{int64_t{1}}}, {"eps", sem::Attr{1e-5}}}));
        break;
      }
      case 11: {  // reshape to the flat shape, or transpose
        if (rank >= 2 && pick(2)) {
          std::vector<int64_t> perm;
          for (int a = rank - 1; a >= 0; --a) perm.push_back(a);
          apply("permute", {x}, attrs({{"axes", sem::Attr{perm}}}));
        } else {
          apply("reshape", {x}, attrs({{"shape", sem::Attr{std::vector<int64_t>{x->type->numel()}}}}));
        }
        break;
      }
      case 12: {  // broadcast back to the base shape
        if (broadcasts_to(x->type->shape, base_))
          apply("broadcast_to", {x}, attrs({{"shape", sem::Attr{base_}}}));
        break;
      }
      default: {  // a chain on a fresh parameter-shaped value
        apply("mul", {any(), constant(0.5)}, {});
        break;
      }
    }
  }
};

TEST(FusionProperty, RandomGraphsComputeTheSameFused) {
  setup();
  constexpr int kGraphs = 500;
  struct Case {
    std::unique_ptr<ir::Module> module;
    std::vector<sem::Value> args;
    ProgramRun want;
  };
  std::vector<Case> cases;
  Generator gen(20251129);
  size_t groups = 0, members = 0;
  std::vector<codegen::KernelSource> kernels;
  for (int i = 0; i < kGraphs; ++i) {
    Case c;
    c.module = gen.make();
    ir::verify_or_throw(*c.module, "random graph");
    for (const Node* p : c.module->entry->params)
      c.args.push_back(random_value(p->type, 1000 + static_cast<uint64_t>(i) * 7 + c.args.size()));
    c.want = call(*c.module, c.module->entry, c.args);
    const std::string before = ir::print_module(*c.module);
    const passes::FusionStats s = passes::fuse_operators(*c.module);
    ir::verify_or_throw(*c.module, "after fusion of\n" + before);
    groups += s.groups;
    members += s.fused_nodes;
    for (const codegen::FusedGroup& g : codegen::fused_groups(*c.module))
      kernels.push_back(codegen::emit_cpp(g.plan));
    size_t fused = 0;
    for (const auto& g : c.module->graphs()) fused += passes::is_fused_graph(*g);
    ASSERT_EQ(codegen::fused_groups(*c.module).size(), fused) << "a group without a loop nest:\n"
                                                              << ir::print_module(*c.module);
    cases.push_back(std::move(c));
  }
  EXPECT_GT(groups, static_cast<size_t>(kGraphs)) << "the generator should make fusable graphs";
  // One translation unit for every kernel: compiled once, then served from the cache. At -O0:
  // this test checks what the kernels compute for many graphs (about 700 kernels, 5 s of
  // compiling instead of 25 s at -O2); the vectorised builds are checked on the programs.
  codegen::FusedOptions options = test_fused_options();
  options.compile.flags = "-std=c++17 -O0 -fopenmp -fPIC -shared -w";
  std::string error;
  options.library = codegen::compile_cpp(codegen::cpp_unit(kernels), options.compile, &error);
  ASSERT_TRUE(options.library) << error;
  size_t launches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    Case& c = cases[i];
    codegen::FusedRuntime rt(*c.module, options);
    ASSERT_EQ(rt.kernels(), rt.groups());
    const ProgramRun got = call(*c.module, c.module->entry, c.args);
    ASSERT_EQ(got.error, c.want.error) << ir::print_module(*c.module);
    ASSERT_EQ(compare(got.result, c.want.result), "")
        << "graph " << i << ":\n"
        << ir::print_module(*c.module) << codegen::kernel_listing(*c.module, false, false);
    launches += rt.launches();
  }
  EXPECT_EQ(launches, groups);
  std::cout << "[ property ] " << kGraphs << " graphs, " << groups << " groups of " << members
            << " nodes, " << kernels.size() << " kernels\n";
}

}  // namespace
}  // namespace spora::fusion_testing
