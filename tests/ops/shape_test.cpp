// Shape primitives, slicing, gather, one_hot, tuples and records.
#include <limits>

#include "ops_test_util.h"

namespace spora::ops::testing {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
Attr L(std::vector<int64_t> v) { return Attr{std::move(v)}; }
Attr I(int64_t v) { return Attr{v}; }

Attrs slice_attrs(std::vector<int64_t> starts, std::vector<int64_t> stops,
                  std::vector<int64_t> steps, std::vector<int64_t> squeeze = {}) {
  return A({{"starts", L(std::move(starts))},
            {"stops", L(std::move(stops))},
            {"steps", L(std::move(steps))},
            {"squeeze", L(std::move(squeeze))}});
}

Value iota(Shape s, DType d = f32) {
  std::vector<double> v(static_cast<size_t>(Type::tensor(d, s)->numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return T(std::move(s), v, d);
}

TEST(Slice, Conformance) {  // c13
  Value x = iota({3, 4});
  EXPECT_EQ(fmt(call("slice", {x}, slice_attrs({1, 0}, {3, kMax}, {1, 2}))),
            "[[4.0, 6.0], [8.0, 10.0]]");
  EXPECT_EQ(fmt(call("slice", {x}, slice_attrs({0}, {1}, {1}, {0}))), "[0.0, 1.0, 2.0, 3.0]");
  EXPECT_EQ(fmt(call("slice", {x}, slice_attrs({0, -1}, {kMax, 0}, {1, 1}, {1}))),
            "[3.0, 7.0, 11.0]");
}

TEST(Slice, PythonSemantics) {
  Value x = iota({5}, i32);
  auto sl = [&](int64_t a, int64_t b, int64_t c) {
    return fmt(call("slice", {x}, slice_attrs({a}, {b}, {c})));
  };
  EXPECT_EQ(sl(kMax, kMax, -1), "[4, 3, 2, 1, 0]");  // x[::-1]
  EXPECT_EQ(sl(kMin, kMin, -1), "[4, 3, 2, 1, 0]");  // either sentinel means omitted
  EXPECT_EQ(sl(3, 0, -1), "[3, 2, 1]");              // x[3:0:-1]
  EXPECT_EQ(sl(-1, -4, -2), "[4, 2]");               // x[-1:-4:-2]
  EXPECT_EQ(sl(-100, 100, 1), "[0, 1, 2, 3, 4]");    // clamped
  EXPECT_EQ(sl(1, kMax, 3), "[1, 4]");
  EXPECT_EQ(sl(3, 1, 1), "[]");
  EXPECT_EQ(sl(10, kMax, -2), "[4, 2, 0]");  // x[10::-2]
  EXPECT_EQ(sl(-2, kMax, 1), "[3, 4]");
  EXPECT_EQ(sl(kMax, 2, -1), "[4, 3]");  // x[:2:-1]
  // 2-D: x[::-1, 1] and x[-1, ::-2]
  Value y = iota({3, 4});
  EXPECT_EQ(fmt(call("slice", {y}, slice_attrs({kMax, 1}, {kMax, 0}, {-1, 1}, {1}))),
            "[9.0, 5.0, 1.0]");
  EXPECT_EQ(fmt(call("slice", {y}, slice_attrs({-1, kMax}, {0, kMax}, {1, -2}, {0}))),
            "[11.0, 9.0]");
  EXPECT_EQ(fmt(call("slice", {y}, slice_attrs({1, 2}, {0, 0}, {0, 0}, {0, 1}))),
            "6.0");  // x[1, 2]
  EXPECT_EQ(infer("slice", {ty(f32, {sem::kDynamicDim, 4})}, slice_attrs({0, 1}, {kMax, 3}, {1, 1}))
                ->str(),
            "f32[?,2]");
  // Missing stops/steps entries: omitted bound, step 1.
  EXPECT_EQ(fmt(call("slice", {y}, slice_attrs({1}, {}, {}))),
            "[[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]]");
}

TEST(Slice, Errors) {
  EXPECT_EQ(infer_error("slice", {ty(f32, {3, 4})}, slice_attrs({5}, {6}, {1}, {0})),
            "index 5 is out of range for axis 0 of size 3");
  EXPECT_EQ(infer_error("slice", {ty(f32, {3, 4})}, slice_attrs({0, -5}, {1, 0}, {1, 1}, {1})),
            "index -5 is out of range for axis 1 of size 4");
  EXPECT_EQ(infer_error("slice", {ty(f32, {3})}, slice_attrs({0}, {3}, {0})),
            "slice step cannot be zero");
  EXPECT_EQ(infer_error("slice", {ty(f32, {3})}, slice_attrs({0, 0}, {1, 1}, {1, 1})),
            "too many indices for f32[3]: 2");
}

TEST(Shape, TransposePermute) {
  Value x = iota({2, 3});
  EXPECT_EQ(fmt(call("transpose", {x})), "[[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]");
  Value y = iota({2, 3, 4});
  EXPECT_EQ(call("transpose", {y}).type()->str(), "f32[4,3,2]");
  Value p = call("permute", {y}, A({{"axes", L({1, 0, 2})}}));
  EXPECT_EQ(p.type()->str(), "f32[3,2,4]");
  EXPECT_EQ(fmt(call("slice", {p}, slice_attrs({1}, {2}, {1}, {0}))),
            "[[4.0, 5.0, 6.0, 7.0], [16.0, 17.0, 18.0, 19.0]]");
  EXPECT_EQ(call("transpose", {y}, A({{"axes", L({0, -1, 1})}})).type()->str(), "f32[2,4,3]");
  EXPECT_EQ(infer_error("permute", {ty(f32, {3, 4})}, A({{"axes", L({0, 0})}})),
            "permute axes [0,0] are not a permutation of the axes of f32[3,4]");
  EXPECT_EQ(fmt(call("transpose", {S(2)})), "2.0");
}

TEST(Shape, Reshape) {
  Value x = iota({2, 3});
  EXPECT_EQ(fmt(call("reshape", {x}, A({{"shape", L({3, 2})}}))),
            "[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]");
  EXPECT_EQ(call("reshape", {x}, A({{"shape", L({-1})}})).type()->str(), "f32[6]");
  EXPECT_EQ(call("reshape", {x}, A({{"shape", L({1, -1, 2})}})).type()->str(), "f32[1,3,2]");
  EXPECT_EQ(call("reshape", {iota({1})}, A({{"shape", L({})}})).type()->str(), "f32");
  EXPECT_EQ(infer_error("reshape", {ty(f32, {2, 3})}, A({{"shape", L({4, 2})}})),
            "cannot reshape f32[2,3] (6 elements) to [4,2] (8 elements)");
  EXPECT_EQ(infer_error("reshape", {ty(f32, {2, 3})}, A({{"shape", L({4, -1})}})),
            "cannot reshape f32[2,3] (6 elements) to [4,-1]");
  EXPECT_EQ(infer_error("reshape", {ty(f32, {2, 3})}, A({{"shape", L({-1, -1})}})),
            "reshape to [-1,-1] has more than one -1");
}

TEST(Shape, BroadcastTo) {
  EXPECT_EQ(fmt(call("broadcast_to", {T({2, 1}, {1, 2})}, A({{"shape", L({2, 2, 3})}}))),
            "[[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]], [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]]");
  EXPECT_EQ(infer_error("broadcast_to", {ty(f32, {3})}, A({{"shape", L({2, 4})}})),
            "cannot broadcast f32[3] to [2,4]");
}

TEST(Shape, ConcatStack) {
  Value a = T({2, 1}, {1, 2}), b = T({2, 2}, {3, 4, 5, 6});
  EXPECT_EQ(fmt(call("concat", {a, b}, A({{"axis", I(1)}}))), "[[1.0, 3.0, 4.0], [2.0, 5.0, 6.0]]");
  EXPECT_EQ(fmt(call("concat", {b, b}, A({{"axis", I(-2)}}))),
            "[[3.0, 4.0], [5.0, 6.0], [3.0, 4.0], [5.0, 6.0]]");
  EXPECT_EQ(fmt(call("concat", {T({1}, {1}, i32), T({2}, {2, 3}, i32)})), "[1, 2, 3]");
  EXPECT_EQ(infer_error("concat", {ty(f32, {2, 1}), ty(f32, {2, 2})}),
            "concat shapes do not match along axis 0: f32[2,1], f32[2,2]");
  EXPECT_EQ(infer_error("concat", {ty(f32, {2}), ty(f64, {2})}),
            "concat shapes do not match along axis 0: f32[2], f64[2]");
  EXPECT_EQ(infer_error("concat", {}), "concat needs at least one tensor");
  Value c = T({2}, {1, 2}), d = T({2}, {3, 4});
  EXPECT_EQ(fmt(call("stack", {c, d})), "[[1.0, 2.0], [3.0, 4.0]]");
  EXPECT_EQ(fmt(call("stack", {c, d}, A({{"axis", I(-1)}}))), "[[1.0, 3.0], [2.0, 4.0]]");
  EXPECT_EQ(infer_error("stack", {ty(f32, {2}), ty(f32, {3})}),
            "stack shapes do not match along axis 0: f32[2], f32[3]");
  EXPECT_EQ(infer_error("stack", {ty(f32, {2})}, A({{"axis", I(2)}})),
            "axis 2 is out of range for f32[2]");
}

TEST(Shape, SqueezeUnsqueezeFlatten) {
  Value x = iota({1, 3, 1});
  EXPECT_EQ(call("squeeze", {x}).type()->str(), "f32[3]");
  EXPECT_EQ(call("squeeze", {x}, A({{"axis", L({-1})}})).type()->str(), "f32[1,3]");
  EXPECT_EQ(call("squeeze", {x}, A({{"axis", I(0)}})).type()->str(), "f32[3,1]");
  EXPECT_EQ(infer_error("squeeze", {ty(f32, {1, 3})}, A({{"axis", L({1})}})),
            "cannot squeeze axis 1 of f32[1,3]: its size is 3");
  EXPECT_EQ(call("unsqueeze", {iota({3})}, A({{"axis", I(0)}})).type()->str(), "f32[1,3]");
  EXPECT_EQ(call("expand_dims", {iota({3})}, A({{"axis", I(-1)}})).type()->str(), "f32[3,1]");
  EXPECT_EQ(infer_error("unsqueeze", {ty(f32, {3})}, A({{"axis", I(3)}})),
            "axis 3 is out of range for f32[3]");
  EXPECT_EQ(fmt(call("flatten", {iota({2, 2, 2})})),
            "[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]");
  EXPECT_EQ(call("flatten", {iota({2, 3, 4})}, A({{"start_axis", I(0)}})).type()->str(), "f32[24]");
}

TEST(Shape, Gather) {
  Value x = iota({3, 2});
  EXPECT_EQ(fmt(call("gather", {x, T({2}, {2, 0}, i32)})), "[[4.0, 5.0], [0.0, 1.0]]");
  EXPECT_EQ(fmt(call("gather", {x, T({2, 2}, {1, -1, 0, 0}, i64)}, A({{"axis", I(1)}}))),
            "[[[1.0, 1.0], [0.0, 0.0]], [[3.0, 3.0], [2.0, 2.0]], [[5.0, 5.0], [4.0, 4.0]]]");
  EXPECT_EQ(fmt(call("gather", {x, S(1, i32)})), "[2.0, 3.0]");
  EXPECT_EQ(call_error("gather", {x, T({1}, {3}, i32)}),
            "index 3 is out of range for axis 0 of size 3");
  EXPECT_EQ(infer_error("gather", {ty(f32, {3}), ty(f32, {2})}),
            "gather indices must be i32 or i64, got f32[2]");
}

TEST(Shape, OneHot) {
  EXPECT_EQ(fmt(call("one_hot", {T({3}, {0, 2, 1}, i32)}, A({{"num_classes", I(3)}}))),
            "[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]");
  EXPECT_EQ(fmt(call("one_hot", {S(1, i64)}, A({{"num_classes", I(2)}, {"dtype", Attr{i32}}}))),
            "[0, 1]");
  EXPECT_EQ(call_error("one_hot", {T({1}, {3}, i32)}, A({{"num_classes", I(3)}})),
            "one_hot label 3 is out of range for 3 classes");
  EXPECT_EQ(infer_error("one_hot", {ty(f32, {2})}, A({{"num_classes", I(3)}})),
            "one_hot labels must be i32 or i64, got f32[2]");
}

TEST(Shape, TuplesAndRecords) {
  Value t = call("make_tuple", {S(1), T({2}, {1, 2}, i32)});
  EXPECT_EQ(t.type()->str(), "(f32, i32[2])");
  EXPECT_EQ(fmt(call("tuple_get", {t}, A({{"index", I(1)}}))), "[1, 2]");
  EXPECT_EQ(fmt(call("tuple_get", {t}, A({{"index", I(-2)}}))), "1.0");
  EXPECT_EQ(infer_error("tuple_get", {t.type()}, A({{"index", I(2)}})),
            "tuple index 2 is out of range for (f32, i32[2])");
  EXPECT_EQ(call("make_tuple", {}).type()->str(), "()");
  Value r = call("make_record", {T({2, 1}, {1, 1}), T({1}, {0})},
                 A({{"name", Attr{std::string("Lin")}}, {"names", Attr{std::string("w,b")}}}));
  EXPECT_EQ(r.type()->str(), "Lin{w: f32[2,1], b: f32[1]}");
  EXPECT_EQ(fmt(r), "Lin{w: [[1.0], [1.0]], b: [0.0]}");
  EXPECT_EQ(fmt(call("record_get", {r}, A({{"field", Attr{std::string("b")}}}))), "[0.0]");
  EXPECT_EQ(infer_error("record_get", {r.type()}, A({{"field", Attr{std::string("x")}}})),
            "Lin{w: f32[2,1], b: f32[1]} has no field 'x'");
  Value u = call("make_record", {S(1)}, A({{"names", Attr{std::string("a")}}}));
  EXPECT_EQ(u.type()->str(), "{a: f32}");
}

}  // namespace
}  // namespace spora::ops::testing
