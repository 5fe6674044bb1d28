// Helpers of the ops tests: build tensors, call a primitive the way the interpreter does
// (defaults filled in from its params, the shape rule checked against the kernel's result),
// and capture user errors.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lang/diagnostics.h"
#include "ops/ops.h"
#include "semantics/registry.h"
#include "semantics/types.h"
#include "semantics/value.h"

namespace spora::ops::testing {

using sem::Attr;
using sem::Attrs;
using sem::Shape;
using sem::Tensor;
using sem::Type;
using sem::TypeP;
using sem::Value;

inline const sem::Primitive& prim(const std::string& name) {
  register_all();
  const sem::Primitive* p = sem::Registry::instance().find(name);
  if (!p) throw std::runtime_error("no primitive " + name);
  return *p;
}

inline Tensor T(Shape shape, std::vector<double> values, DType dtype = DType::f32) {
  Tensor t = Tensor::empty(dtype, std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel()) throw std::runtime_error("T: wrong count");
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}
inline Tensor S(double v, DType dtype = DType::f32) { return Tensor::scalar(dtype, v); }

// Attributes in the primitive's parameter order with its defaults filled in.
inline Attrs with_defaults(const sem::Primitive& p, const Attrs& given) {
  Attrs out;
  for (const auto& ps : p.params) {
    if (ps.kind != sem::ParamSpec::Kind::Attr) continue;
    if (const Attr* a = given.find(ps.name))
      out.set(ps.name, *a);
    else if (ps.default_value)
      out.set(ps.name, *ps.default_value);
  }
  for (const auto& [name, a] : given.items())
    if (!out.has(name)) throw std::runtime_error("attribute " + name + " is not a parameter");
  return out;
}

inline Attrs A(std::vector<std::pair<std::string, Attr>> items) {
  Attrs a;
  for (auto& [n, v] : items) a.set(n, v);
  return a;
}

inline TypeP infer(const std::string& name, const std::vector<TypeP>& types,
                   const Attrs& attrs = {}) {
  const sem::Primitive& p = prim(name);
  return p.infer(types, with_defaults(p, attrs));
}

// Runs the shape rule and the kernel; checks that they agree on the result type.
inline Value call(const std::string& name, const std::vector<Value>& inputs,
                  const Attrs& attrs = {}) {
  const sem::Primitive& p = prim(name);
  Attrs full = with_defaults(p, attrs);
  std::vector<TypeP> types;
  for (const Value& v : inputs) types.push_back(v.kind == Value::Kind::None ? nullptr : v.type());
  TypeP t = p.infer(types, full);
  Value out = p.eval(inputs, full);
  EXPECT_TRUE(sem::same_type(t, out.type()))
      << name << ": shape rule says " << t->str() << ", kernel gave " << out.type()->str();
  return out;
}

inline std::string fmt(const Value& v) { return sem::format_value(v); }

// The message of the UserError that f throws ("" when none).
template <class F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

inline std::string infer_error(const std::string& name, const std::vector<TypeP>& types,
                               const Attrs& attrs = {}) {
  return user_error_of([&] { infer(name, types, attrs); });
}
inline std::string call_error(const std::string& name, const std::vector<Value>& inputs,
                              const Attrs& attrs = {}) {
  return user_error_of([&] { call(name, inputs, attrs); });
}

inline TypeP ty(DType d, Shape s = {}) { return Type::tensor(d, std::move(s)); }
constexpr DType f32 = DType::f32;
constexpr DType f64 = DType::f64;
constexpr DType i32 = DType::i32;
constexpr DType i64 = DType::i64;
constexpr DType b8 = DType::boolean;

inline void expect_values(const Value& v, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_TRUE(v.is_tensor());
  ASSERT_EQ(v.tensor.numel(), static_cast<int64_t>(want.size())) << fmt(v);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(v.tensor.get(static_cast<int64_t>(i)), want[i],
                tol * std::max(1.0, std::abs(want[i])))
        << "element " << i << " of " << fmt(v);
}

}  // namespace spora::ops::testing
