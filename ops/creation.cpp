// Creation primitives (no tensor inputs): zeros, ones, full, arange, and the seeded random
// normal and uniform (semantics/rng.h documents the counter-based generator). None is
// differentiable.
//
//   zeros(shape=[], dtype=f32)   ones(shape=[], dtype=f32)   full(shape, value, dtype=f32)
//   arange(start, stop=none, step=1, dtype=i32)   start..stop by step; stop none: 0..start;
//     start/stop/step are int or float attributes (AttrKind::Any), values start + i * step
//   normal(mean=0.0, std=1.0, shape=[], seed=0, dtype=f32)     float dtypes only
//   uniform(low=0.0, high=1.0, shape=[], seed=0, dtype=f32)    [low, high), float dtypes only
#include <cmath>
#include <limits>

#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/rng.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;

const Shape& shape_attr(const Attrs& attrs, const std::string& name) {
  static const Shape kScalar;
  const Shape& s = attrs.has("shape") ? attrs.get_ints("shape") : kScalar;
  for (int64_t d : s)
    if (d < 0) user_error(name + " shape " + sem::attr_str(ints(s)) + " has a negative size");
  return s;
}

DType dtype_attr(const Attrs& attrs, DType fallback) {
  return attrs.has("dtype") ? attrs.get_dtype("dtype") : fallback;
}

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params) {
  Primitive p;
  p.name = std::move(name);
  p.family = "creation";
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  p.doc = std::move(doc);
  p.params = std::move(params);
  p.differentiable = false;
  return p;
}

void add_fill(sem::Registry& r, const std::string& name, const std::string& doc, double value) {
  Primitive p = row(
      name, doc, {attr("shape", AK::Ints, ints({})), attr("dtype", AK::DType, Attr{DType::f32})});
  p.infer = [name](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 0, 0, name);
    return Type::tensor(dtype_attr(attrs, DType::f32), shape_attr(attrs, name));
  };
  p.eval = [name, value](const std::vector<Value>&, const Attrs& attrs) -> Value {
    return Tensor::full(dtype_attr(attrs, DType::f32), shape_attr(attrs, name), value);
  };
  r.add(std::move(p));
}

void add_full(sem::Registry& r) {
  Primitive p = row("full", "full(shape, value, dtype=f32): a tensor filled with value",
                    {attr("shape", AK::Ints), attr("value", AK::Float),
                     attr("dtype", AK::DType, Attr{DType::f32})});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 0, 0, "full");
    return Type::tensor(dtype_attr(attrs, DType::f32), shape_attr(attrs, "full"));
  };
  p.eval = [](const std::vector<Value>&, const Attrs& attrs) -> Value {
    return Tensor::full(dtype_attr(attrs, DType::f32), shape_attr(attrs, "full"),
                        attrs.get_float("value"));
  };
  r.add(std::move(p));
}

struct Range {
  double start, step;
  int64_t count;
};

Range arange_range(const Attrs& attrs) {
  double start = attrs.get_float("start"), stop;
  if (attrs.is_none("stop")) {
    stop = start;
    start = 0;
  } else {
    stop = attrs.get_float("stop");
  }
  double step = attrs.has("step") ? attrs.get_float("step") : 1.0;
  if (step == 0) user_error("arange step cannot be zero");
  double n = std::ceil((stop - start) / step);
  if (!std::isfinite(n)) user_error("arange bounds must be finite");
  return {start, step, n > 0 ? static_cast<int64_t>(n) : 0};
}

void add_arange(sem::Registry& r) {
  Primitive p =
      row("arange",
          "arange(start, stop=none, step=1, dtype=i32): evenly spaced values in [start, stop)",
          {attr("start", AK::Any), attr("stop", AK::Any, none()),
           attr("step", AK::Any, int_attr(1)), attr("dtype", AK::DType, Attr{DType::i32})});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 0, 0, "arange");
    return Type::tensor(dtype_attr(attrs, DType::i32), {arange_range(attrs).count});
  };
  p.eval = [](const std::vector<Value>&, const Attrs& attrs) -> Value {
    Range rg = arange_range(attrs);
    Tensor out = Tensor::empty(dtype_attr(attrs, DType::i32), {rg.count});
    for (int64_t i = 0; i < rg.count; ++i) out.set(i, rg.start + static_cast<double>(i) * rg.step);
    return out;
  };
  r.add(std::move(p));
}

void add_random(sem::Registry& r, bool normal) {
  std::string name = normal ? "normal" : "uniform";
  std::string a = normal ? "mean" : "low", b = normal ? "std" : "high";
  Primitive p =
      row(name,
          normal ? "normal(mean=0.0, std=1.0, shape=[], seed=0, dtype=f32): seeded Gaussian samples"
                 : "uniform(low=0.0, high=1.0, shape=[], seed=0, dtype=f32): seeded samples in "
                   "[low, high)",
          {attr(a, AK::Float, float_attr(0.0)), attr(b, AK::Float, float_attr(1.0)),
           attr("shape", AK::Ints, ints({})), attr("seed", AK::Int, int_attr(0)),
           attr("dtype", AK::DType, Attr{DType::f32})});
  p.infer = [name](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 0, 0, name);
    DType dt = dtype_attr(attrs, DType::f32);
    if (!is_float(dt))
      user_error(name + " needs a float dtype (f32, f64, f16, bf16), got " +
                 std::string(dtype_name(dt)));
    return Type::tensor(dt, shape_attr(attrs, name));
  };
  p.eval = [name, normal, a, b](const std::vector<Value>&, const Attrs& attrs) -> Value {
    DType dt = dtype_attr(attrs, DType::f32);
    double pa = attrs.has(a) ? attrs.get_float(a) : 0.0;
    double pb = attrs.has(b) ? attrs.get_float(b) : 1.0;
    uint64_t seed = static_cast<uint64_t>(attrs.has("seed") ? attrs.get_int("seed") : 0);
    Tensor out = Tensor::empty(dt, shape_attr(attrs, name));
    for (int64_t i = 0; i < out.numel(); ++i) {
      uint64_t k = static_cast<uint64_t>(i);
      if (normal) {
        out.set(i, pa + pb * sem::rng::normal01(seed, k));
      } else {
        double v = pa + (pb - pa) * sem::rng::uniform01(seed, k);
        out.set(i, v);
        if (pb > pa && out.get(i) >= pb) {  // rounding reached high: step back below it
          if (dt == DType::f32) {
            out.data<float>()[i] = std::nextafter(static_cast<float>(pb), static_cast<float>(pa));
          } else if (dt == DType::f64) {
            out.data<double>()[i] = std::nextafter(pb, pa);
          } else {  // f16/bf16 (sign and magnitude bits): one step toward -inf
            uint16_t& h = out.data<uint16_t>()[i];
            h = (h & 0x8000u) ? static_cast<uint16_t>(h + 1) : h == 0 ? 0x8001 : h - 1;
          }
        }
      }
    }
    return out;
  };
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void creation_costs(sem::Registry& r) {
  set_cost(r, "zeros", sem::creation_cost(0));
  set_cost(r, "ones", sem::creation_cost(0));
  set_cost(r, "full", sem::creation_cost(0));
  set_cost(r, "arange", sem::creation_cost(1));
  set_cost(r, "normal", sem::creation_cost(10));
  set_cost(r, "uniform", sem::creation_cost(10));
}

// Creation with a shape attribute: the output may split anywhere; each rank makes its shard.
Spec creation_spec(const Types&, const TypeP& out, const Attrs&) {
  if (!out || !out->is_tensor()) return std::nullopt;
  DimSpec s;
  s.output = s.add_dims(rank(out));
  return s;
}

void creation_rules(sem::Registry& r) {
  for (const char* name : {"zeros", "ones", "full"})
    set_sharding(r, name, dim_rule(creation_spec, parallel::local_shape_attr("shape")));
  set_sharding(r, "arange", replicated_only_rule("arange's values depend on the global position"));
  for (const char* name : {"normal", "uniform"})
    set_sharding(r, name,
                 replicated_only_rule("random samples are numbered by their global index "
                                      "(counter-based RNG): a shard drawn locally would repeat "
                                      "the first shard's numbers"));
}

}  // namespace facets

}  // namespace

void register_creation(sem::Registry& r) {
  add_fill(r, "zeros", "zeros(shape=[], dtype=f32): a tensor of zeros", 0.0);
  add_fill(r, "ones", "ones(shape=[], dtype=f32): a tensor of ones", 1.0);
  add_full(r);
  add_arange(r);
  add_random(r, true);
  add_random(r, false);
  // Cost and sharding rules of the rows above.
  facets::creation_costs(r);
  facets::creation_rules(r);
}

}  // namespace spora::ops
