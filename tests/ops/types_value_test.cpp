// Type::str, type equality, Tensor conversions, format_value and attr_str.
#include <limits>

#include "ops_test_util.h"

namespace spora::ops::testing {
namespace {

TEST(TypeStr, Forms) {
  EXPECT_EQ(ty(f32, {64, 784})->str(), "f32[64,784]");
  EXPECT_EQ(ty(f32)->str(), "f32");
  EXPECT_EQ(ty(i32, {sem::kDynamicDim})->str(), "i32[?]");
  EXPECT_EQ(Type::tuple({ty(f32), ty(i32, {3})})->str(), "(f32, i32[3])");
  EXPECT_EQ(Type::tuple({ty(f32)})->str(), "(f32,)");
  EXPECT_EQ(Type::unit()->str(), "()");
  EXPECT_EQ(Type::record("", {"w", "b"}, {ty(f32, {2, 1}), ty(f32, {1})})->str(),
            "{w: f32[2,1], b: f32[1]}");
  EXPECT_EQ(Type::record("MLP", {"w"}, {ty(f32, {2})})->str(), "MLP{w: f32[2]}");
  EXPECT_EQ(Type::string()->str(), "str");
  EXPECT_EQ(Type::iterator("mnist", Type::tuple({ty(f32, {64, 784}), ty(i32, {64})}))->str(),
            "iter<(f32[64,784], i32[64])>");
  EXPECT_EQ(Type::function({ty(f32), ty(i32)}, ty(f32))->str(), "fn(f32, i32) -> f32");
  EXPECT_EQ(ty(DType::boolean, {2})->str(), "bool[2]");
  EXPECT_EQ(ty(DType::bf16, {2})->str(), "bf16[2]");
}

TEST(Type, EqualityAndHelpers) {
  EXPECT_TRUE(sem::same_type(ty(f32, {2}), ty(f32, {2})));
  EXPECT_FALSE(sem::same_type(ty(f32, {2}), ty(f64, {2})));
  EXPECT_FALSE(sem::same_type(ty(f32, {2}), nullptr));
  EXPECT_TRUE(sem::same_type(nullptr, nullptr));
  EXPECT_FALSE(
      sem::same_type(Type::record("A", {"w"}, {ty(f32)}), Type::record("B", {"w"}, {ty(f32)})));
  EXPECT_EQ(ty(f32, {2, 3})->numel(), 6);
  EXPECT_EQ(ty(f32, {2, sem::kDynamicDim})->numel(), -1);
  EXPECT_EQ(Type::record("", {"w", "b"}, {ty(f32), ty(f32)})->field_index("b"), 1);
  EXPECT_EQ(parse_dtype("bool"), DType::boolean);
  EXPECT_EQ(parse_dtype("f8"), std::nullopt);
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
}

TEST(Tensor, ConversionsAndCast) {
  Tensor t = T({3}, {1.5, -2.7, 3.0});
  EXPECT_EQ(fmt(t.cast(i32)), "[1, -2, 3]");
  EXPECT_EQ(fmt(t.cast(b8)), "[true, true, true]");
  EXPECT_EQ(fmt(T({2}, {0.0, 2.0}).cast(b8)), "[false, true]");
  Tensor h = T({3}, {1.5, -2.0, 65504.0}, DType::f16);
  EXPECT_EQ(h.get(0), 1.5);
  EXPECT_EQ(h.get(2), 65504.0);
  Tensor bf = T({1}, {3.140625}, DType::bf16);
  EXPECT_EQ(bf.get(0), 3.140625);
  EXPECT_EQ(Tensor::scalar(i64, 7).item(), 7.0);
  Tensor r = T({2, 3}, {1, 2, 3, 4, 5, 6}).reshaped({3, 2});
  EXPECT_EQ(fmt(r), "[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]");
  Tensor c = r.clone();
  c.set(0, 9);
  EXPECT_EQ(r.get(0), 1.0);
}

// Storing a double in an integer element truncates toward zero; NaN and values outside the
// type's range are clamped (a plain static_cast of them is undefined behaviour).
TEST(Tensor, IntegerElementsClampWhatDoesNotFit) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor t = T({5}, {-2.7, 1e300, -inf, nan, 3e9}, i64);
  EXPECT_EQ(fmt(t), "[-2, 9223372036854774784, -9223372036854775808, 0, 3000000000]");
  EXPECT_EQ(fmt(T({5}, {-2.7, 1e300, -inf, nan, 3e9}).cast(i32)),
            "[-2, 2147483647, -2147483648, 0, 2147483647]");
  Tensor s = Tensor::empty(i32, {2});
  s.set(0, -3e9);
  s.set(1, 2147483647.9);
  EXPECT_EQ(fmt(s), "[-2147483648, 2147483647]");
}

TEST(FormatValue, Scalars) {
  EXPECT_EQ(fmt(S(7)), "7.0");
  EXPECT_EQ(fmt(S(0.2447284710547976)), "0.24472848");  // shortest digits of the f32 value
  EXPECT_EQ(fmt(S(0.2447284710547976, f64)), "0.2447284710547976");
  EXPECT_EQ(fmt(S(1e-8)), "1e-08");
  EXPECT_EQ(fmt(S(-0.5)), "-0.5");
  EXPECT_EQ(fmt(S(1e16, f64)), "1e+16");
  EXPECT_EQ(fmt(S(1.5e20, f64)), "1.5e+20");
  EXPECT_EQ(fmt(S(123456.0)), "123456.0");
  EXPECT_EQ(fmt(S(0.0001)), "0.0001");
  EXPECT_EQ(fmt(S(0.1)), "0.1");
  EXPECT_EQ(fmt(S(111, i32)), "111");
  EXPECT_EQ(fmt(S(-3, i64)), "-3");
  EXPECT_EQ(fmt(S(1, b8)), "true");
  EXPECT_EQ(fmt(S(0, b8)), "false");
  EXPECT_EQ(fmt(S(std::numeric_limits<double>::quiet_NaN())), "nan");
  EXPECT_EQ(fmt(S(-std::numeric_limits<double>::infinity())), "-inf");
}

TEST(FormatValue, TensorsTuplesRecords) {
  EXPECT_EQ(fmt(T({2, 3}, {11, 41, 91, 41, 101, 181})),
            "[[11.0, 41.0, 91.0], [41.0, 101.0, 181.0]]");
  EXPECT_EQ(fmt(T({3}, {1, 2, 3}, i32)), "[1, 2, 3]");
  EXPECT_EQ(fmt(T({0}, {})), "[]");
  EXPECT_EQ(fmt(T({2, 0}, {})), "[[], []]");
  EXPECT_EQ(fmt(Value::tuple({S(7.5), S(5)})), "(7.5, 5.0)");
  EXPECT_EQ(fmt(Value::tuple({S(1, i32)})), "(1,)");
  EXPECT_EQ(fmt(Value::tuple({})), "()");
  TypeP rt = Type::record("Lin", {"w", "b"}, {ty(f32, {1}), ty(f32)});
  EXPECT_EQ(fmt(Value::record(rt, {T({1}, {2}), S(0)})), "Lin{w: [2.0], b: 0.0}");
  EXPECT_EQ(fmt(Value::string("epoch")), "epoch");
}

TEST(FormatValue, Summarised) {
  std::vector<double> v(1001);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  EXPECT_EQ(fmt(T({1001}, v, i32)), "[0, 1, 2, ..., 998, 999, 1000]");
  std::vector<double> w(1000);
  EXPECT_EQ(fmt(T({1000}, w, i32)).size(), 1000u * 3 - 2 + 2);  // not summarised
  std::vector<double> m(40 * 40);
  EXPECT_EQ(fmt(T({40, 40}, m, i32)).substr(0, 40), "[[0, 0, 0, ..., 0, 0, 0], [0, 0, 0, ...,");
}

TEST(Attrs, GettersAndStr) {
  Attrs a = A({{"axis", Attr{int64_t{1}}},
               {"keepdims", Attr{true}},
               {"shape", Attr{std::vector<int64_t>{2, 3}}},
               {"eps", Attr{1e-5}},
               {"name", Attr{std::string("a\"b")}},
               {"dtype", Attr{DType::f32}},
               {"stop", Attr{std::monostate{}}}});
  EXPECT_EQ(a.get_int("axis"), 1);
  EXPECT_EQ(a.get_float("axis"), 1.0);
  EXPECT_TRUE(a.get_bool("keepdims"));
  EXPECT_EQ(a.get_ints("shape"), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(a.is_none("stop"));
  EXPECT_TRUE(a.is_none("missing"));
  EXPECT_FALSE(a.is_none("axis"));
  EXPECT_THROW(a.get_int("missing"), lang::InternalError);
  EXPECT_THROW(a.get_string("axis"), lang::InternalError);
  std::string s;
  for (const auto& [n, v] : a.items()) s += n + "=" + sem::attr_str(v) + " ";
  EXPECT_EQ(s, "axis=1 keepdims=true shape=[2,3] eps=1e-05 name=\"a\\\"b\" dtype=f32 stop=none ");
  a.set("axis", Attr{int64_t{2}});
  EXPECT_EQ(a.items().front().first, "axis");
  EXPECT_EQ(a.get_int("axis"), 2);
}

}  // namespace
}  // namespace spora::ops::testing
