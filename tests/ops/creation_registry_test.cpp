// Creation primitives and the RNG; internal primitives (print, assert, identity); the registry.
#include <cmath>
#include <set>
#include <sstream>

#include "ops_test_util.h"
#include "semantics/rng.h"

namespace spora::ops::testing {
namespace {

Attr I(int64_t v) { return Attr{v}; }
Attr L(std::vector<int64_t> v) { return Attr{std::move(v)}; }
Attr F(double v) { return Attr{v}; }

TEST(Creation, Fill) {
  EXPECT_EQ(fmt(call("zeros", {}, A({{"shape", L({2, 2})}}))), "[[0.0, 0.0], [0.0, 0.0]]");
  EXPECT_EQ(fmt(call("ones", {}, A({{"shape", L({3})}, {"dtype", Attr{i32}}}))), "[1, 1, 1]");
  EXPECT_EQ(fmt(call("zeros", {})), "0.0");
  EXPECT_EQ(fmt(call("full", {}, A({{"shape", L({2})}, {"value", F(2.5)}}))), "[2.5, 2.5]");
  EXPECT_EQ(fmt(call("full", {}, A({{"shape", L({1})}, {"value", I(7)}, {"dtype", Attr{i64}}}))),
            "[7]");
  EXPECT_EQ(infer_error("zeros", {}, A({{"shape", L({2, -1})}})),
            "zeros shape [2,-1] has a negative size");
}

TEST(Creation, Arange) {
  EXPECT_EQ(fmt(call("arange", {}, A({{"start", F(5)}}))), "[0, 1, 2, 3, 4]");
  EXPECT_EQ(fmt(call("arange", {}, A({{"start", I(2)}, {"stop", I(8)}, {"step", I(3)}}))),
            "[2, 5]");
  EXPECT_EQ(fmt(call("arange", {}, A({{"start", F(5)}, {"stop", F(0)}, {"step", F(-2)}}))),
            "[5, 3, 1]");
  EXPECT_EQ(
      fmt(call("arange", {},
               A({{"start", F(0)}, {"stop", F(1)}, {"step", F(0.25)}, {"dtype", Attr{f32}}}))),
      "[0.0, 0.25, 0.5, 0.75]");
  EXPECT_EQ(fmt(call("arange", {}, A({{"start", F(3)}, {"stop", F(1)}}))), "[]");
  EXPECT_EQ(infer_error("arange", {}, A({{"start", F(0)}, {"stop", F(1)}, {"step", F(0)}})),
            "arange step cannot be zero");
}

TEST(Creation, RngIsCounterBased) {
  // Pinned values of the documented generator (semantics/rng.h): SplitMix64 from state
  // splitmix64(seed).
  EXPECT_EQ(sem::rng::splitmix64(0),
            0xE220A8397B1DCDAFull);  // Vigna's reference: first output of seed 0
  EXPECT_EQ(sem::rng::bits(0, 0), sem::rng::finalize(sem::rng::splitmix64(0) + sem::rng::kGamma));
  EXPECT_NE(sem::rng::bits(0, 0), sem::rng::bits(0, 1));
  EXPECT_NE(sem::rng::bits(0, 0), sem::rng::bits(1, 0));
  double u = sem::rng::uniform01(42, 7);
  EXPECT_GE(u, 0.0);
  EXPECT_LT(u, 1.0);
}

TEST(Creation, NormalStatistics) {
  Attrs at = A({{"shape", L({100000})}, {"seed", I(3)}, {"mean", F(1.0)}, {"std", F(2.0)}});
  Value a = call("normal", {}, at);
  Value b = call("normal", {}, at);
  Value c = call("normal", {},
                 A({{"shape", L({100000})}, {"seed", I(4)}, {"mean", F(1.0)}, {"std", F(2.0)}}));
  double s = 0, ss = 0;
  bool same = true, differ = false;
  for (int64_t i = 0; i < 100000; ++i) {
    double v = a.tensor.get(i);
    s += v;
    ss += v * v;
    same = same && v == b.tensor.get(i);
    differ = differ || v != c.tensor.get(i);
  }
  double mean = s / 1e5, sd = std::sqrt(ss / 1e5 - mean * mean);
  EXPECT_TRUE(same);
  EXPECT_TRUE(differ);
  EXPECT_NEAR(mean, 1.0, 0.03);
  EXPECT_NEAR(sd, 2.0, 0.03);
  // A prefix of a bigger tensor is the smaller tensor (element i depends on (seed, i) only).
  Value small = call("normal", {},
                     A({{"shape", L({10})}, {"seed", I(3)}, {"mean", F(1.0)}, {"std", F(2.0)}}));
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(small.tensor.get(i), a.tensor.get(i));
  EXPECT_EQ(call("normal", {}, A({{"shape", L({2, 3})}, {"dtype", Attr{f64}}})).type()->str(),
            "f64[2,3]");
  EXPECT_EQ(infer_error("normal", {}, A({{"dtype", Attr{i32}}})),
            "normal needs a float dtype (f32, f64, f16, bf16), got i32");
}

TEST(Creation, UniformRange) {
  Value a = call("uniform", {},
                 A({{"shape", L({100000})}, {"low", F(-1.0)}, {"high", F(3.0)}, {"seed", I(9)}}));
  double s = 0, lo = 1e9, hi = -1e9;
  for (int64_t i = 0; i < 100000; ++i) {
    double v = a.tensor.get(i);
    s += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 3.0);
  EXPECT_NEAR(s / 1e5, 1.0, 0.02);
  EXPECT_NEAR(lo, -1.0, 0.01);
  EXPECT_NEAR(hi, 3.0, 0.01);
  Value b = call("uniform", {}, A({{"shape", L({5})}, {"seed", I(9)}}));
  Value c = call("uniform", {}, A({{"shape", L({5})}, {"seed", I(10)}}));
  EXPECT_NE(fmt(b), fmt(c));
  EXPECT_EQ(fmt(b), fmt(call("uniform", {}, A({{"shape", L({5})}, {"seed", I(9)}}))));
}

TEST(Internal, PrintWritesFormattedValues) {
  std::ostringstream os;
  set_print_stream(&os);
  Value r =
      call("print", {Value::string("epoch"), S(0, i32), Value::string("loss"), T({2}, {0.5, 1})});
  call("print", {Value::tuple({S(7.5), S(5)})});
  call("print", {});
  set_print_stream(nullptr);
  EXPECT_EQ(os.str(), "epoch 0 loss [0.5, 1.0]\n(7.5, 5.0)\n\n");
  EXPECT_EQ(r.type()->str(), "()");
  EXPECT_TRUE(prim("print").effectful);
}

TEST(Internal, AssertIdentityStopGradient) {
  EXPECT_EQ(
      call_error("assert", {S(0, b8)}, A({{"message", Attr{std::string("x must be positive")}}})),
      "assertion failed: x must be positive");
  EXPECT_EQ(call_error("assert", {T({2}, {1, 0}, b8)}), "assertion failed");
  EXPECT_EQ(call_error("assert", {S(1, b8)}), "");
  EXPECT_EQ(infer_error("assert", {ty(f32)}), "assert condition must be bool, got f32");
  EXPECT_TRUE(prim("assert").effectful);
  EXPECT_EQ(fmt(call("identity", {T({2}, {1, 2})})), "[1.0, 2.0]");
  EXPECT_EQ(fmt(call("stop_gradient", {T({2}, {1, 2})})), "[1.0, 2.0]");
  EXPECT_FALSE(prim("stop_gradient").differentiable);
}

TEST(Registry, EveryPrimitiveIsComplete) {
  register_all();
  register_all();  // idempotent
  const std::set<std::string> control = {"if", "while", "for_range", "for_each"};
  const std::set<std::string> expected = {"neg",
                                          "exp",
                                          "log",
                                          "sqrt",
                                          "rsqrt",
                                          "abs",
                                          "tanh",
                                          "sigmoid",
                                          "relu",
                                          "gelu",
                                          "sin",
                                          "cos",
                                          "sign",
                                          "floor",
                                          "ceil",
                                          "round",
                                          "erf",
                                          "log1p",
                                          "expm1",
                                          "square",
                                          "reciprocal",
                                          "add",
                                          "sub",
                                          "mul",
                                          "div",
                                          "floordiv",
                                          "mod",
                                          "pow",
                                          "maximum",
                                          "minimum",
                                          "eq",
                                          "ne",
                                          "lt",
                                          "le",
                                          "gt",
                                          "ge",
                                          "logical_and",
                                          "logical_or",
                                          "logical_not",
                                          "where",
                                          "cast",
                                          "sum",
                                          "mean",
                                          "max",
                                          "min",
                                          "prod",
                                          "argmax",
                                          "argmin",
                                          "all",
                                          "any",
                                          "matmul",
                                          "transpose",
                                          "permute",
                                          "reshape",
                                          "broadcast_to",
                                          "concat",
                                          "stack",
                                          "slice",
                                          "gather",
                                          "one_hot",
                                          "squeeze",
                                          "unsqueeze",
                                          "expand_dims",
                                          "flatten",
                                          "make_tuple",
                                          "tuple_get",
                                          "make_record",
                                          "record_get",
                                          "softmax",
                                          "log_softmax",
                                          "logsumexp",
                                          "cross_entropy",
                                          "layer_norm",
                                          "layer_norm_grad",
                                          "batch_norm",
                                          "dropout",
                                          "conv2d",
                                          "max_pool2d",
                                          "avg_pool2d",
                                          "zeros",
                                          "ones",
                                          "full",
                                          "arange",
                                          "normal",
                                          "uniform",
                                          "print",
                                          "assert",
                                          "identity",
                                          "stop_gradient",
                                          "if",
                                          "while",
                                          "for_range",
                                          "for_each"};
  std::set<std::string> names;
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    names.insert(p->name);
    EXPECT_FALSE(p->doc.empty()) << p->name;
    EXPECT_FALSE(p->family.empty()) << p->name;
    if (control.count(p->name)) {
      EXPECT_TRUE(p->params.empty()) << p->name;
      EXPECT_FALSE(p->infer) << p->name;
      EXPECT_FALSE(p->eval) << p->name;
      continue;
    }
    EXPECT_TRUE(p->infer) << p->name;
    EXPECT_TRUE(p->eval) << p->name;
    std::set<std::string> params;
    int lists = 0;
    for (const auto& ps : p->params) {
      EXPECT_TRUE(params.insert(ps.name).second) << p->name << " repeats " << ps.name;
      lists += ps.kind == sem::ParamSpec::Kind::InputList;
    }
    EXPECT_LE(lists, 1) << p->name;
  }
  for (const std::string& n : expected) EXPECT_TRUE(names.count(n)) << "missing " << n;
  EXPECT_FALSE(names.count("call"));
  sem::Primitive dup;
  dup.name = "add";
  EXPECT_THROW(sem::Registry::instance().add(dup), lang::InternalError);
  // Sorted by name.
  auto all = sem::Registry::instance().all();
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1]->name, all[i]->name);
}

TEST(Registry, NonDifferentiableMarks) {
  for (const char* n :
       {"eq",      "lt",    "logical_and", "logical_not",   "argmax",   "argmin", "floor", "ceil",
        "sign",    "round", "normal",      "uniform",       "zeros",    "ones",   "full",  "arange",
        "one_hot", "print", "assert",      "stop_gradient", "floordiv", "all",    "any"})
    EXPECT_FALSE(prim(n).differentiable) << n;
  for (const char* n : {"add", "matmul", "exp", "sum", "max", "softmax", "conv2d", "slice", "where",
                        "dropout", "cast", "identity", "concat"})
    EXPECT_TRUE(prim(n).differentiable) << n;
}

TEST(Registry, SignaturesTheFrontEndRelieson) {
  auto sig = [](const std::string& n) {
    std::string s;
    for (const auto& ps : prim(n).params) {
      if (!s.empty()) s += ", ";
      s += ps.name;
      if (ps.kind == sem::ParamSpec::Kind::InputList) s += "...";
      if (ps.kind == sem::ParamSpec::Kind::OptionalInput) s += "?";
      if (ps.default_value) s += "=" + sem::attr_str(*ps.default_value);
    }
    return s;
  };
  EXPECT_EQ(sig("sum"), "x, axis=none, keepdims=false");
  EXPECT_EQ(sig("reshape"), "x, shape");
  EXPECT_EQ(sig("transpose"), "x, axes=none");
  EXPECT_EQ(sig("concat"), "xs..., axis=0");
  EXPECT_EQ(sig("conv2d"), "x, w, b?, stride=[1], padding=[0], dilation=[1], groups=1");
  EXPECT_EQ(sig("max_pool2d"), "x, kernel, stride=none, padding=[0]");
  EXPECT_EQ(sig("softmax"), "x, axis=-1");
  EXPECT_EQ(sig("cross_entropy"), "logits, labels, reduction=\"mean\"");
  EXPECT_EQ(sig("layer_norm"), "x, gamma?, beta?, ndim=1, eps=1e-05");
  EXPECT_EQ(sig("batch_norm"),
            "x, gamma, beta, running_mean, running_var, training=false, momentum=0.1, eps=1e-05");
  EXPECT_EQ(sig("dropout"), "x, p=0.5, seed=0, training=true");
  EXPECT_EQ(sig("normal"), "mean=0.0, std=1.0, shape=[], seed=0, dtype=f32");
  EXPECT_EQ(sig("uniform"), "low=0.0, high=1.0, shape=[], seed=0, dtype=f32");
  EXPECT_EQ(sig("full"), "shape, value, dtype=f32");
  EXPECT_EQ(sig("arange"), "start, stop=none, step=1, dtype=i32");
  EXPECT_EQ(sig("slice"), "x, starts, stops, steps, squeeze=[]");
  EXPECT_EQ(sig("gather"), "x, indices, axis=0");
  EXPECT_EQ(sig("one_hot"), "labels, num_classes, dtype=f32");
  EXPECT_EQ(sig("print"), "xs...");
  EXPECT_EQ(sig("make_record"), "fields..., name=\"\", names");
}

}  // namespace
}  // namespace spora::ops::testing
