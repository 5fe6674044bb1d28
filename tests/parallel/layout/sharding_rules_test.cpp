// The sharding facet of every primitive: every row has one, and for each rule and strategy on
// small shapes, running the op's reference kernel on every rank's shards (with the strategy's
// local attributes) and reassembling (partial sums added, splits concatenated) equals the op on
// the whole tensors. Also: forward() agrees with the strategies, the local shapes agree with
// the row's shape rule, and the replicated strategy comes first.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "parallel/layout/shard_data.h"
#include "parallel/sharding/dim_rule.h"
#include "parallel/sharding/sharding.h"
#include "semantics/registry.h"

namespace spora::parallel {
namespace {

using sem::Attr;
using sem::Attrs;
using sem::Tensor;
using sem::TypeP;
using sem::Value;

const sem::Primitive& prim(const std::string& name) {
  ops::register_all();
  const sem::Primitive* p = sem::Registry::instance().find(name);
  if (!p) throw std::runtime_error("no primitive " + name);
  return *p;
}

Attrs with_defaults(const sem::Primitive& p,
                    const std::vector<std::pair<std::string, Attr>>& given) {
  Attrs out;
  for (const auto& ps : p.params) {
    if (ps.kind != sem::ParamSpec::Kind::Attr && ps.kind != sem::ParamSpec::Kind::Kwargs) continue;
    bool found = false;
    for (const auto& [n, v] : given)
      if (n == ps.name) {
        out.set(n, v);
        found = true;
      }
    if (!found && ps.default_value) out.set(ps.name, *ps.default_value);
  }
  return out;
}

TEST(ShardingRules, EveryRowHasARuleWhoseFirstStrategyIsReplicated) {
  ops::register_all();
  int rows = 0, replicated_only = 0;
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    const ShardingRule* r = sharding_rule(*p);
    ASSERT_NE(r, nullptr) << p->name << " (" << p->family << ") has no sharding rule";
    EXPECT_TRUE(r->enumerate && r->forward && r->local_attrs) << p->name;
    ++rows;
    if (!r->replicated_only_reason.empty()) ++replicated_only;
  }
  EXPECT_GT(rows, 100);
  std::printf("%d rows, %d replicated only\n", rows, replicated_only);
}

// ---- the property ---------------------------------------------------------------------------

struct Gen {
  std::mt19937_64 rng{42};
  Tensor real(std::vector<int64_t> shape, double lo = 0.5, double hi = 2.0) {
    Tensor t = Tensor::empty(DType::f64, shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, std::uniform_real_distribution<double>(lo, hi)(rng));
    return t;
  }
  Tensor ints(std::vector<int64_t> shape, int64_t lo, int64_t hi) {
    Tensor t = Tensor::empty(DType::i64, shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.set(i, static_cast<double>(std::uniform_int_distribution<int64_t>(lo, hi)(rng)));
    return t;
  }
  Tensor bools(std::vector<int64_t> shape) {
    Tensor t = Tensor::empty(DType::boolean, shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(rng() % 2));
    return t;
  }
};

struct Case {
  Case(std::string op_, std::vector<Value> in_, std::vector<std::pair<std::string, Attr>> attrs_,
       int min_strategies_ = 2, std::string label_ = "")
      : op(std::move(op_)),
        in(std::move(in_)),
        attrs(std::move(attrs_)),
        min_strategies(min_strategies_),
        label(std::move(label_)) {}
  std::string op;
  std::vector<Value> in;
  std::vector<std::pair<std::string, Attr>> attrs;
  int min_strategies;  // on the 2x2 mesh (1: replicated only)
  std::string label;
};

Tensor scaled(const Tensor& t, double s) {
  if (s == 1) return t;
  Tensor o = t.clone();
  for (int64_t i = 0; i < o.numel(); ++i) o.set(i, o.get(i) * s);
  return o;
}

// shard() of a partial layout puts the whole shard on the rank at coordinate 0 of the partial
// axes and zeros elsewhere: a non-linear op would pass with zeros (relu(0) = 0). Instead every
// other rank of the group gets random values and the holder the shard minus their sum, so only
// an op that is really linear in that input reassembles to the whole op's result.
std::vector<Tensor> random_partial_shards(const Tensor& global, const Layout& l, const Mesh& m,
                                          std::mt19937_64& rng) {
  std::vector<Tensor> shards = shard(global, l, m);
  if (!l.is_partial() || !is_float(global.dtype())) return shards;
  for (int64_t r = 0; r < m.size(); ++r) {
    std::vector<int64_t> c = m.coords(r);
    bool holder = true;
    for (int a : l.partial) holder = holder && c[static_cast<size_t>(a)] == 0;
    if (holder) continue;
    for (int a : l.partial) c[static_cast<size_t>(a)] = 0;
    Tensor& mine = shards[static_cast<size_t>(r)];
    Tensor& held = shards[static_cast<size_t>(m.rank_of(c))];
    for (int64_t i = 0; i < mine.numel(); ++i) {
      const double v = std::uniform_real_distribution<double>(-1, 1)(rng);
      mine.set(i, v);
      held.set(i, held.get(i) - v);
    }
  }
  return shards;
}

// Strategies with a partial input checked so far (the linear rules' pass-through ones).
int& partial_strategies() {
  static int n = 0;
  return n;
}

bool close(const Tensor& a, const Tensor& b, std::string& why) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) {
    why = a.type()->str() + " vs " + b.type()->str();
    return false;
  }
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.get(i), y = b.get(i);
    if (std::abs(x - y) > 1e-9 * (1 + std::abs(y))) {
      why = "element " + std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y);
      return false;
    }
  }
  return true;
}

// Runs every strategy of the case on mesh m; returns the number of strategies checked.
int check_case(const Case& c, const Mesh& m) {
  const sem::Primitive& p = prim(c.op);
  const ShardingRule& rule = *sharding_rule(p);
  const Attrs attrs = with_defaults(p, c.attrs);
  std::vector<TypeP> in_types;
  for (const Value& v : c.in) in_types.push_back(v.type());
  const TypeP out_type = p.infer(in_types, attrs);
  const Value want = p.eval(c.in, attrs);
  const std::vector<OpStrategy> strategies = rule.enumerate(in_types, out_type, attrs, m);
  const std::string who =
      c.op + (c.label.empty() ? "" : " (" + c.label + ")") + " on " + m.to_string();
  if (strategies.empty()) {
    ADD_FAILURE() << who << ": no strategy";
    return 0;
  }
  EXPECT_EQ(strategies[0].name, "replicated") << who;
  EXPECT_DOUBLE_EQ(strategies[0].local_flops_fraction, 1) << who;
  for (const Layout& l : strategies[0].inputs) EXPECT_TRUE(l.is_replicated()) << who;
  int n = 0;
  std::mt19937_64 rng(7);
  for (const OpStrategy& s : strategies) {
    const std::string what = who + " strategy " + s.name;
    SCOPED_TRACE(what);
    EXPECT_EQ(s.inputs.size(), c.in.size());
    // Shard the inputs.
    std::vector<std::vector<Value>> local_in(static_cast<size_t>(m.size()));
    std::vector<TypeP> local_types;
    for (size_t i = 0; i < c.in.size(); ++i) {
      if (!c.in[i].is_tensor()) {
        for (auto& l : local_in) l.push_back(c.in[i]);
        local_types.push_back(in_types[i]);
        continue;
      }
      // Partial inputs: the linear rules' pass-through strategies (DimSpec::linear).
      const std::vector<Tensor> shards = random_partial_shards(c.in[i].tensor, s.inputs[i], m, rng);
      for (size_t r = 0; r < shards.size(); ++r) local_in[r].push_back(shards[r]);
      local_types.push_back(local_type(in_types[i], s.inputs[i], m));
    }
    const Attrs local_attrs = rule.local_attrs(attrs, s, in_types, out_type, m);
    // The row's shape rule on the local types gives the local output type.
    const TypeP local_out = p.infer(local_types, local_attrs);
    // Run every rank.
    std::vector<Value> got;
    for (const auto& li : local_in) got.push_back(p.eval(li, local_attrs));
    std::string why;
    if (out_type->is_tensor()) {
      EXPECT_TRUE(sem::same_type(local_out, local_type(out_type, s.output, m)))
          << local_out->str() << " vs " << local_type(out_type, s.output, m)->str();
      std::vector<Tensor> parts;
      for (const Value& v : got) parts.push_back(scaled(v.tensor, s.output_scale));
      const Tensor back = unshard(parts, s.output, m);
      EXPECT_TRUE(close(back, want.tensor, why)) << why;
      // forward agrees with the strategy, except that it cannot know the splits of output
      // dims no input carries (broadcast_to's new dims, creation ops): those it leaves whole.
      // Partial inputs it refuses (the partitioner sums them first unless a strategy says).
      std::optional<Layout> f = rule.forward(s.inputs, in_types, out_type, attrs, m);
      bool partial_in = false;
      for (const Layout& l : s.inputs) partial_in = partial_in || l.is_partial();
      if (partial_in) {
        EXPECT_FALSE(f) << "forward takes partial inputs";
        ++partial_strategies();
      } else {
        bool agrees = f && f->partial == s.output.partial && f->rank() == s.output.rank();
        for (int d = 0; agrees && d < f->rank(); ++d) {
          const int fa = f->tensor_map[static_cast<size_t>(d)];
          const int sa = s.output.tensor_map[static_cast<size_t>(d)];
          bool carried = false;  // is axis sa splitting some input?
          for (const Layout& l : s.inputs) carried = carried || (sa >= 0 && l.dim_of_axis(sa) >= 0);
          agrees = fa == sa || (fa < 0 && !carried);
        }
        EXPECT_TRUE(agrees) << "forward gives " << (f ? f->to_string() : "nothing")
                            << ", the strategy " << s.output.to_string();
      }
    } else {
      // A tuple of tensors (batch_norm in training).
      EXPECT_EQ(s.tuple_outputs.size(), out_type->elems.size());
      for (size_t e = 0; e < s.tuple_outputs.size(); ++e) {
        std::vector<Tensor> parts;
        for (const Value& v : got) parts.push_back(scaled(v.items()[e].tensor, s.output_scale));
        const Tensor back = unshard(parts, s.tuple_outputs[e], m);
        EXPECT_TRUE(close(back, want.items()[e].tensor, why)) << "element " << e << ": " << why;
      }
    }
    // The work fraction: 1 / devices splitting the work (an axis partial in an input does not
    // split it: every device runs the op on its partial piece).
    int64_t used = 1;
    for (int a = 0; a < m.ndim(); ++a) {
      bool passed = false;
      for (const Layout& l : s.inputs) passed = passed || l.has_partial(a);
      bool splits = (s.output.has_partial(a) && !passed) || s.output.dim_of_axis(a) >= 0;
      for (const Layout& l : s.inputs) splits = splits || l.dim_of_axis(a) >= 0;
      for (const Layout& l : s.tuple_outputs) splits = splits || l.dim_of_axis(a) >= 0;
      if (splits) used *= m.axis_size(a);
    }
    EXPECT_DOUBLE_EQ(s.local_flops_fraction, 1.0 / static_cast<double>(used));
    ++n;
  }
  EXPECT_GE(static_cast<int>(strategies.size()),
            m.size() == 4 && m.ndim() == 2 ? c.min_strategies : 1)
      << who;
  if (c.min_strategies == 1) {
    EXPECT_EQ(strategies.size(), 1u) << who;
  }
  return n;
}

std::vector<Case> cases() {
  Gen g;
  std::vector<Case> cs;
  using Ints = std::vector<int64_t>;
  for (const char* op :
       {"neg",        "abs", "sign", "square", "relu",  "floor",    "ceil",         "round",
        "reciprocal", "exp", "log",  "sqrt",   "rsqrt", "tanh",     "sigmoid",      "gelu",
        "sin",        "cos", "erf",  "log1p",  "expm1", "identity", "stop_gradient"})
    cs.push_back({op, {g.real({4, 2})}, {}, 7});
  for (const char* op : {"add", "sub", "mul", "div", "floordiv", "mod", "maximum", "minimum", "pow",
                         "eq", "ne", "lt", "le", "gt", "ge"}) {
    cs.push_back({op, {g.real({4, 2}), g.real({2})}, {}, 7, "broadcast row"});
    cs.push_back({op, {g.real({2, 4, 2}), g.real({4, 1})}, {}, 13, "broadcast column"});
  }
  cs.push_back({"logical_and", {g.bools({4, 2}), g.bools({4, 2})}, {}, 7});
  cs.push_back({"logical_or", {g.bools({4, 2}), g.bools({2})}, {}, 7});
  cs.push_back({"logical_not", {g.bools({4, 4})}, {}, 7});
  cs.push_back({"where", {g.bools({4, 2}), g.real({4, 2}), g.real({2})}, {}, 7});
  cs.push_back({"cast", {g.real({4, 2}, -3, 3)}, {{"dtype", DType::i64}}, 7});
  cs.push_back({"stage_boundary", {g.real({4, 2})}, {{"stage", int64_t{1}}}, 7});
  for (const char* op : {"sum", "mean", "prod", "max", "min", "logsumexp"}) {
    const bool sums = std::string(op) == "sum" || std::string(op) == "mean";
    cs.push_back({op, {g.real({4, 2, 4})}, {}, sums ? 13 : 1, "all axes"});
    cs.push_back({op, {g.real({4, 2, 4})}, {{"axis", int64_t{1}}}, 2, "axis 1"});
    cs.push_back({op,
                  {g.real({4, 2, 4})},
                  {{"axis", Ints{0, 2}}, {"keepdims", true}},
                  2,
                  "axes 0 2 keepdims"});
  }
  for (const char* op : {"argmax", "argmin"}) {
    cs.push_back({op, {g.real({4, 2, 4})}, {}, 1, "flat"});
    cs.push_back({op, {g.real({4, 2, 4})}, {{"axis", int64_t{2}}}, 2, "axis 2"});
  }
  for (const char* op : {"all", "any"}) {
    cs.push_back({op, {g.bools({4, 4})}, {}, 1, "all axes"});
    cs.push_back({op, {g.bools({4, 4})}, {{"axis", int64_t{0}}}, 2, "axis 0"});
  }
  // matmul: 13 strategies for [4,4] @ [4,2] on 2x2 (none/m/n/k on one axis, the rest on the other).
  cs.push_back({"matmul", {g.real({4, 4}), g.real({4, 2})}, {}, 13, "2-D"});
  cs.push_back({"matmul", {g.real({2, 4, 4}), g.real({4, 2})}, {}, 13, "batched"});
  cs.push_back({"matmul", {g.real({2, 1, 4, 2}), g.real({2, 2, 4})}, {}, 13, "broadcast batch"});
  cs.push_back({"matmul", {g.real({4}), g.real({4, 2})}, {}, 5, "vector-matrix"});
  cs.push_back({"matmul", {g.real({4, 4}), g.real({4})}, {}, 5, "matrix-vector"});
  cs.push_back({"matmul", {g.real({4}), g.real({4})}, {}, 3, "dot"});
  cs.push_back({"conv2d",
                {g.real({2, 4, 4, 4}), g.real({2, 4, 3, 3})},
                {{"padding", Ints{1}}},
                4,
                "no bias"});
  cs.push_back({"conv2d",
                {g.real({2, 4, 4, 4}), g.real({2, 4, 3, 3}), g.real({2})},
                {{"padding", Ints{1}}},
                4,
                "bias"});
  cs.push_back({"conv2d",
                {g.real({2, 4, 4, 4}), g.real({4, 2, 3, 3})},
                {{"groups", int64_t{2}}},
                3,
                "groups"});
  cs.push_back({"conv2d_input_grad",
                {g.real({2, 2, 4, 4}), g.real({2, 4, 3, 3})},
                {{"padding", Ints{1}}, {"shape", Ints{2, 4, 4, 4}}},
                4});
  cs.push_back({"conv2d_weight_grad",
                {g.real({2, 4, 4, 4}), g.real({2, 2, 4, 4})},
                {{"padding", Ints{1}}, {"shape", Ints{2, 4, 3, 3}}},
                4});
  cs.push_back({"max_pool2d", {g.real({2, 2, 4, 4})}, {{"kernel", Ints{2}}}, 3});
  cs.push_back({"avg_pool2d", {g.real({2, 2, 4, 4})}, {{"kernel", Ints{2}}}, 3});
  cs.push_back(
      {"max_pool2d_grad", {g.real({2, 2, 4, 4}), g.real({2, 2, 2, 2})}, {{"kernel", Ints{2}}}, 3});
  cs.push_back({"max_pool2d_select",
                {g.real({2, 2, 4, 4}), g.real({2, 2, 4, 4})},
                {{"kernel", Ints{2}}},
                3});
  cs.push_back({"avg_pool2d_grad",
                {g.real({2, 2, 2, 2})},
                {{"kernel", Ints{2}}, {"shape", Ints{2, 2, 4, 4}}},
                3});
  cs.push_back({"softmax", {g.real({4, 2, 4})}, {}, 3});
  cs.push_back({"log_softmax", {g.real({4, 2, 4})}, {{"axis", int64_t{0}}}, 3});
  cs.push_back({"layer_norm", {g.real({4, 2, 4}), g.real({4}), g.real({4})}, {}, 3});
  cs.push_back({"layer_norm", {g.real({4, 2, 4})}, {{"ndim", int64_t{2}}}, 2, "ndim 2"});
  cs.push_back({"layer_norm_grad", {g.real({4, 2, 4}), g.real({4, 2, 4})}, {}, 3});
  cs.push_back({"layer_norm_grad",
                {g.real({4, 2, 4}), g.real({4, 2, 4})},
                {{"ndim", int64_t{2}}},
                2,
                "ndim 2"});
  for (const char* red : {"mean", "sum", "none"}) {
    cs.push_back({"cross_entropy",
                  {g.real({4, 4}), g.ints({4}, 0, 3)},
                  {{"reduction", std::string(red)}},
                  2,
                  std::string("hard ") + red});
    cs.push_back({"cross_entropy",
                  {g.real({4, 4, 2}), g.real({4, 4, 2})},
                  {{"reduction", std::string(red)}},
                  3,
                  std::string("soft 3-D ") + red});
  }
  cs.push_back({"batch_norm",
                {g.real({2, 4, 2, 2}), g.real({4}), g.real({4}), g.real({4}), g.real({4})},
                {{"training", true}},
                2,
                "training"});
  cs.push_back({"batch_norm",
                {g.real({2, 4, 2, 2}), g.real({4}), g.real({4}), g.real({4}), g.real({4})},
                {{"training", false}},
                3,
                "eval"});
  cs.push_back({"dropout", {g.real({4, 4})}, {{"training", false}}, 7, "eval"});
  cs.push_back({"dropout", {g.real({4, 4})}, {{"training", true}, {"p", 0.5}}, 1, "training"});
  cs.push_back({"transpose", {g.real({4, 2, 4})}, {}, 13});
  cs.push_back({"permute", {g.real({4, 2, 4})}, {{"axes", Ints{2, 0, 1}}}, 13});
  cs.push_back({"reshape", {g.real({4, 2, 4})}, {{"shape", Ints{8, 4}}}, 5, "merge"});
  cs.push_back({"reshape", {g.real({4, 8})}, {{"shape", Ints{4, 2, -1}}}, 5, "split"});
  cs.push_back({"reshape", {g.real({4, 1, 8})}, {{"shape", Ints{2, 2, 8}}}, 5, "regroup"});
  cs.push_back({"flatten", {g.real({4, 2, 4})}, {}, 5});
  cs.push_back({"squeeze", {g.real({4, 1, 2})}, {}, 5});
  cs.push_back({"unsqueeze", {g.real({4, 2})}, {{"axis", int64_t{1}}}, 5});
  cs.push_back({"expand_dims", {g.real({4, 2})}, {{"axis", int64_t{0}}}, 5});
  cs.push_back({"broadcast_to", {g.real({4})}, {{"shape", Ints{2, 4}}}, 5});
  cs.push_back({"broadcast_to", {g.real({4, 1})}, {{"shape", Ints{4, 4}}}, 3, "column"});
  cs.push_back({"concat", {g.real({4, 2}), g.real({4, 2})}, {{"axis", int64_t{1}}}, 3});
  cs.push_back({"stack", {g.real({4, 2}), g.real({4, 2})}, {{"axis", int64_t{0}}}, 5});
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  cs.push_back({"slice",
                {g.real({4, 4, 2})},
                {{"starts", Ints{0, 1}}, {"stops", Ints{4, 3}}, {"steps", Ints{1, 1}}},
                5,
                "whole dim 0"});
  cs.push_back({"slice",
                {g.real({4, 4, 2})},
                {{"starts", Ints{kMax, 1}},
                 {"stops", Ints{kMax, 0}},
                 {"steps", Ints{1, 1}},
                 {"squeeze", Ints{1}}},
                5,
                "squeeze"});
  cs.push_back({"slice_grad",
                {g.real({4, 2, 2})},
                {{"shape", Ints{4, 4, 2}},
                 {"starts", Ints{0, 1}},
                 {"stops", Ints{4, 3}},
                 {"steps", Ints{1, 1}}},
                5});
  cs.push_back({"gather", {g.real({4, 4}), g.ints({2, 2}, 0, 3)}, {{"axis", int64_t{0}}}, 7});
  cs.push_back({"gather", {g.real({4, 4}), g.ints({2}, 0, 3)}, {{"axis", int64_t{1}}}, 5});
  cs.push_back({"scatter_add",
                {g.real({4, 4}), g.ints({2}, 0, 3), g.real({2, 4})},
                {{"axis", int64_t{0}}},
                3});
  cs.push_back({"one_hot", {g.ints({4, 2}, 0, 3)}, {{"num_classes", int64_t{4}}}, 5});
  cs.push_back({"zeros", {}, {{"shape", Ints{4, 2}}}, 5});
  cs.push_back({"ones", {}, {{"shape", Ints{4, 2}}}, 5});
  cs.push_back({"full", {}, {{"shape", Ints{4, 2}}, {"value", 3.5}}, 5});
  cs.push_back({"arange", {}, {{"start", int64_t{0}}, {"stop", int64_t{8}}}, 1});
  cs.push_back({"normal", {}, {{"shape", Ints{4, 4}}}, 1});
  cs.push_back({"uniform", {}, {{"shape", Ints{4, 4}}}, 1});
  return cs;
}

TEST(ShardingRules, ShardedRunsEqualTheWholeOp) {
  const std::vector<Case> cs = cases();
  int strategies = 0;
  std::map<std::string, int> per_mesh;
  for (const Mesh& m : {Mesh{{2, 2}, {}}, Mesh{{4}, {}}, Mesh{{2}, {}}}) {
    for (const Case& c : cs) {
      const int n = check_case(c, m);
      strategies += n;
      per_mesh[m.to_string()] += n;
    }
  }
  // Every row whose rule may split is among the cases.
  std::set<std::string> covered;
  for (const Case& c : cs) covered.insert(c.op);
  // shard_hint is a pin, not a choice: its one strategy is the pinned layout (checked in
  // tests/parallel/annotation_partition_test.cpp).
  for (const sem::Primitive* p : sem::Registry::instance().all())
    if (sharding_rule(*p)->replicated_only_reason.empty() && p->name != "shard_hint") {
      EXPECT_TRUE(covered.count(p->name)) << p->name << " splits but no case runs it";
    }
  std::printf(
      "%zu cases, %d strategies checked (2x2: %d, 4: %d, 2: %d), %d of them with partial "
      "inputs\n",
      cs.size(), strategies, per_mesh["2x2"], per_mesh["4"], per_mesh["2"], partial_strategies());
  EXPECT_GT(strategies, 1000);
  EXPECT_GT(partial_strategies(), 200);
}

// The check above would catch a rule that called a non-linear op linear: relu of random
// partial pieces does not add up to relu of the whole (with shard()'s zeros it would).
TEST(ShardingRules, RandomPartialPiecesExposeNonLinearOps) {
  const Mesh m{{2, 2}, {}};
  Gen g;
  const Tensor x = g.real({4, 2}, -1, 1);
  const Layout l{{-1, -1}, {0, 1}};
  std::mt19937_64 rng(3);
  const sem::Primitive& relu = prim("relu");
  auto run = [&](const std::vector<Tensor>& pieces) {
    std::vector<Tensor> out;
    for (const Tensor& t : pieces) out.push_back(relu.eval({Value(t)}, {}).tensor);
    return unshard(out, l, m);
  };
  const Tensor want = relu.eval({Value(x)}, {}).tensor;
  std::string why;
  EXPECT_TRUE(close(unshard(random_partial_shards(x, l, m, rng), l, m), x, why)) << why;
  EXPECT_TRUE(close(run(shard(x, l, m)), want, why)) << "zeros hide the non-linearity";
  EXPECT_FALSE(close(run(random_partial_shards(x, l, m, rng)), want, why));
}

TEST(ShardingRules, SpecificStrategies) {
  const Mesh m{{2, 2}, {"dp", "tp"}};
  const sem::Primitive& mm = prim("matmul");
  const TypeP a = sem::Type::tensor(DType::f32, {8, 16}),
              b = sem::Type::tensor(DType::f32, {16, 4});
  const TypeP out = sem::Type::tensor(DType::f32, {8, 4});
  std::map<std::string, OpStrategy> by_name;
  for (const OpStrategy& s : sharding_rule(mm)->enumerate({a, b}, out, {}, m)) by_name[s.name] = s;
  // Megatron's row-parallel linear: k split -> partial output (an all-reduce follows).
  ASSERT_TRUE(by_name.count("k:tp"));
  EXPECT_EQ(by_name["k:tp"].inputs[0], (Layout{{-1, 1}, {}}));
  EXPECT_EQ(by_name["k:tp"].inputs[1], (Layout{{1, -1}, {}}));
  EXPECT_EQ(by_name["k:tp"].output, (Layout{{-1, -1}, {1}}));
  EXPECT_EQ(by_name["k:tp"].output.partition_string(m), "(1, 1) partial(tp)");
  // Data parallel x column parallel.
  ASSERT_TRUE(by_name.count("m:dp n:tp"));
  EXPECT_EQ(by_name["m:dp n:tp"].output, (Layout{{0, 1}, {}}));
  EXPECT_DOUBLE_EQ(by_name["m:dp n:tp"].local_flops_fraction, 0.25);
  // forward rejects an inconsistent pair (k split differently in a and b) and partial inputs.
  const ShardingRule& r = *sharding_rule(mm);
  EXPECT_FALSE(r.forward({Layout{{-1, 1}, {}}, Layout{{0, -1}, {}}}, {a, b}, out, {}, m));
  EXPECT_FALSE(r.forward({Layout{{-1, -1}, {0}}, Layout{{-1, -1}, {}}}, {a, b}, out, {}, m));
  EXPECT_EQ(*r.forward({Layout{{0, -1}, {}}, Layout{{-1, -1}, {}}}, {a, b}, out, {}, m),
            (Layout{{0, -1}, {}}));
  // mean over a split axis: output_scale 1/2 and reshape-free local attributes.
  const sem::Primitive& mean = prim("mean");
  Attrs ma = with_defaults(mean, {{"axis", int64_t{0}}});
  const TypeP x = sem::Type::tensor(DType::f32, {8, 4});
  const TypeP mo = mean.infer({x}, ma);
  bool found = false;
  for (const OpStrategy& s : sharding_rule(mean)->enumerate({x}, mo, ma, m))
    if (s.inputs[0] == Layout{{0, -1}, {}}) {
      found = true;
      EXPECT_DOUBLE_EQ(s.output_scale, 0.5);
      EXPECT_EQ(s.output, (Layout{{-1}, {0}}));
    }
  EXPECT_TRUE(found);
  // reshape's target becomes the local shape.
  const sem::Primitive& rs = prim("reshape");
  Attrs ra = with_defaults(rs, {{"shape", std::vector<int64_t>{32, -1}}});
  const TypeP rx = sem::Type::tensor(DType::f32, {8, 4, 4});
  const TypeP ro = rs.infer({rx}, ra);
  for (const OpStrategy& s : sharding_rule(rs)->enumerate({rx}, ro, ra, m)) {
    if (s.inputs[0] == Layout{{0, -1, -1}, {}}) {
      EXPECT_EQ(s.output, (Layout{{0, -1}, {}}));
      EXPECT_EQ(sharding_rule(rs)->local_attrs(ra, s, {rx}, ro, m).get_ints("shape"),
                (std::vector<int64_t>{16, 4}));
    }
  }
  // Linear rules pass partial sums on: add of two partial inputs, mul with one; never add with
  // one partial input (the other would be added once per device).
  const TypeP v = sem::Type::tensor(DType::f32, {8, 4});
  std::map<std::string, OpStrategy> adds, muls;
  for (const OpStrategy& s : sharding_rule(prim("add"))->enumerate({v, v}, v, {}, m))
    adds[s.name] = s;
  for (const OpStrategy& s : sharding_rule(prim("mul"))->enumerate({v, v}, v, {}, m))
    muls[s.name] = s;
  ASSERT_TRUE(adds.count("partial(tp)"));
  EXPECT_EQ(adds["partial(tp)"].inputs[0], (Layout{{-1, -1}, {1}}));
  EXPECT_EQ(adds["partial(tp)"].inputs[1], (Layout{{-1, -1}, {1}}));
  EXPECT_EQ(adds["partial(tp)"].output, (Layout{{-1, -1}, {1}}));
  ASSERT_TRUE(adds.count("d0:dp partial(tp)"));
  EXPECT_EQ(adds["d0:dp partial(tp)"].output, (Layout{{0, -1}, {1}}));
  EXPECT_DOUBLE_EQ(adds["d0:dp partial(tp)"].local_flops_fraction, 0.5);
  for (const auto& [name, s] : adds)
    EXPECT_EQ(s.inputs[0].partial, s.inputs[1].partial) << "add " << name;
  ASSERT_TRUE(muls.count("in1:partial(dp, tp)"));
  EXPECT_EQ(muls["in1:partial(dp, tp)"].inputs[0], (Layout{{-1, -1}, {}}));
  EXPECT_EQ(muls["in1:partial(dp, tp)"].output, (Layout{{-1, -1}, {0, 1}}));
  for (const auto& [name, s] : muls)
    EXPECT_FALSE(s.inputs[0].is_partial() && s.inputs[1].is_partial()) << "mul " << name;
  // relu is not linear: no strategy takes a partial input.
  for (const OpStrategy& s : sharding_rule(prim("relu"))->enumerate({v}, v, {}, m))
    EXPECT_FALSE(s.inputs[0].is_partial()) << s.name;
  // cast to an integer rounds each piece: not linear; between floats it is.
  const sem::Primitive& cast = prim("cast");
  for (const auto& [dt, want] : {std::pair{DType::i64, false}, std::pair{DType::f64, true}}) {
    Attrs ca = with_defaults(cast, {{"dtype", dt}});
    bool any = false;
    for (const OpStrategy& s : sharding_rule(cast)->enumerate({v}, cast.infer({v}, ca), ca, m))
      any = any || s.inputs[0].is_partial();
    EXPECT_EQ(any, want) << dtype_name(dt);
  }
  // Random rows say why they stay replicated.
  EXPECT_NE(sharding_rule(prim("normal"))->replicated_only_reason.find("counter-based"),
            std::string::npos);
}

}  // namespace
}  // namespace spora::parallel
