// Meshes and layouts: coordinates, groups, local shapes, shard offsets, text forms and errors.
#include "parallel/layout/layout.h"

#include <gtest/gtest.h>

#include <tuple>

#include "lang/diagnostics.h"
#include "parallel/layout/shard_data.h"

namespace spora::parallel {
namespace {

template <class F>
std::string user_error_of(F&& f) {
  try {
    f();
  } catch (const lang::UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Mesh, CoordsAreRowMajorAndRankOfInvertsThem) {
  Mesh m{{2, 4}, {}};
  EXPECT_EQ(m.size(), 8);
  EXPECT_EQ(m.rank_count(), 8);
  EXPECT_EQ(m.ndim(), 2);
  EXPECT_EQ(m.coords(0), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(m.coords(5), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(m.coords(7), (std::vector<int64_t>{1, 3}));
  for (int64_t r = 0; r < 8; ++r) EXPECT_EQ(m.rank_of(m.coords(r)), r);
  EXPECT_EQ(m.to_string(), "2x4");
  EXPECT_EQ(m.axis_name(1), "m1");
}

TEST(Mesh, GroupsAreTheRanksDifferingAlongTheAxes) {
  Mesh m{{2, 4}, {"dp", "tp"}};
  EXPECT_EQ(m.group(5, {1}), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(m.group(5, {0}), (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(m.group(5, {0, 1}), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.group(5, {}), (std::vector<int64_t>{5}));
  Mesh m3{{2, 3, 2}, {}};
  EXPECT_EQ(m3.group(0, {0, 2}), (std::vector<int64_t>{0, 1, 6, 7}));
  EXPECT_EQ(m.axis_index("tp"), 1);
  EXPECT_EQ(m.axis_index("m0"), 0);
  EXPECT_EQ(m.axis_index("pp"), -1);
}

TEST(Mesh, ParseAndValidate) {
  EXPECT_EQ(Mesh::parse("2x4").shape, (std::vector<int64_t>{2, 4}));
  Mesh named = Mesh::parse("dp=2, tp=4");
  EXPECT_EQ(named.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(named.axis_names, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(user_error_of([] { Mesh::parse("2xq"); }),
            "cannot read the mesh '2xq': 'q' is not a device count");
  EXPECT_EQ(user_error_of([] { Mesh::parse("2x0"); }),
            "mesh axis 1 has 0 devices; every axis needs at least 1");
  EXPECT_EQ(user_error_of([] { Mesh::parse("a=2,a=2"); }), "mesh axis name 'a' is used twice");
  EXPECT_EQ(user_error_of([] {
              Mesh{{2, 2}, {"x"}}.validate();
            }),
            "the mesh 2x2 has 2 axes but 1 axis names");
}

TEST(Layout, LocalShapesAndOffsets) {
  Mesh m{{2, 4}, {}};
  Layout l{{1, -1, 0}, {}};
  EXPECT_EQ(l.local_shape({8, 3, 6}, m), (std::vector<int64_t>{2, 3, 3}));
  // Rank 6 = (1, 2): dim 0 is cut by axis 1 (coordinate 2), dim 2 by axis 0 (coordinate 1).
  EXPECT_EQ(l.shard_offset({8, 3, 6}, m, 6), (std::vector<int64_t>{4, 0, 3}));
  EXPECT_EQ(l.shard_offset({8, 3, 6}, m, 0), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_DOUBLE_EQ(l.local_fraction(m), 1.0 / 8);
  EXPECT_FALSE(l.is_replicated());
  EXPECT_TRUE(Layout::replicated(3).is_replicated());
  EXPECT_FALSE((Layout{{-1}, {0}}).is_replicated());
  EXPECT_EQ(Layout::split(2, 1, 0), (Layout{{-1, 0}, {}}));
  EXPECT_EQ(l.dim_of_axis(0), 2);
  EXPECT_EQ(l.dim_of_axis(1), 0);
  EXPECT_EQ(l.pieces(0, m), 4);
  EXPECT_EQ(l.pieces(1, m), 1);
}

TEST(Layout, Errors) {
  Mesh m{{2, 4}, {}};
  EXPECT_EQ(user_error_of([&] {
              Layout{{-1, 1}, {}}.local_shape({4, 10}, m);
            }),
            "cannot split dimension 1 of size 10 over mesh axis 1 of 4 devices");
  EXPECT_EQ(user_error_of([&] {
              Layout{{0, 0}, {}}.validate(m);
            }),
            "layout [m0, m0] splits two dimensions over mesh axis m0");
  EXPECT_EQ(user_error_of([&] {
              Layout{{2}, {}}.validate(m);
            }),
            "layout [m2] splits dimension 0 over mesh axis 2, but the mesh 2x4 has 2 axes");
  EXPECT_EQ(user_error_of([&] {
              Layout{{0}, {0}}.validate(m);
            }),
            "layout [m0] partial(m0) both splits and is partial over mesh axis m0");
  EXPECT_EQ(user_error_of([&] {
              Layout{{-1}, {1, 0}}.validate(m);
            }),
            "layout [-] partial(m1, m0): the partial axes must be sorted and unique");
  EXPECT_EQ(user_error_of([&] {
              Layout{{-1}, {}}.local_shape({4, 4}, m);
            }),
            "layout [-] has 1 dimensions but the tensor has 2");
}

TEST(Layout, TextFormsRoundTrip) {
  Mesh m{{2, 4}, {"dp", "tp"}};
  Layout l{{1, -1}, {0}};
  EXPECT_EQ(l.to_string(), "[m1, -] partial(m0)");
  EXPECT_EQ(l.to_string(m), "[tp, -] partial(dp)");
  EXPECT_EQ(l.partition_string(m), "(4, 1) partial(dp)");
  EXPECT_EQ(Layout::parse("[m1, -] partial(m0)", m, 2), l);
  EXPECT_EQ(Layout::parse("[tp, -] partial(dp)", m, 2), l);
  EXPECT_EQ(Layout::parse("(4, 1) partial(dp)", m, 2), l);
  EXPECT_EQ(Layout::parse("(2, 4)", m, 2), (Layout{{0, 1}, {}}));
  EXPECT_EQ(Layout::parse("(1, 2)", m, 2), (Layout{{-1, 0}, {}}));
  EXPECT_EQ(Layout::parse("[-1, 0]", m, 2), (Layout{{-1, 0}, {}}));
  EXPECT_EQ(Layout::parse("(2,)", m, 1), (Layout{{0}, {}}));
  EXPECT_EQ((Layout{{0}, {}}).partition_string(m), "(2,)");
  EXPECT_EQ(Layout::parse("()", m, 0), Layout{});
  // Every layout of a rank-2 tensor on the mesh reads back from both of its forms.
  for (int a : {-1, 0, 1})
    for (int b : {-1, 0, 1}) {
      if (a >= 0 && a == b) continue;
      Layout x{{a, b}, {}};
      EXPECT_EQ(Layout::parse(x.to_string(), m, 2), x) << x.to_string();
      EXPECT_EQ(Layout::parse(x.to_string(m), m, 2), x) << x.to_string();
    }
}

TEST(Layout, ParseErrors) {
  Mesh m{{2, 2}, {}};
  EXPECT_EQ(user_error_of([&] { Layout::parse("(3, 1)", m, 2); }),
            "cannot read the layout '(3, 1)': no unused axis of the mesh 2x2 has 3 devices (a "
            "dimension is split over one mesh axis)");
  EXPECT_EQ(user_error_of([&] { Layout::parse("[m0, x]", m, 2); }),
            "cannot read the layout '[m0, x]': 'x' is not an axis of the mesh 2x2");
  EXPECT_EQ(user_error_of([&] { Layout::parse("[m0]", m, 2); }),
            "cannot read the layout '[m0]': it has 1 dimensions but the tensor has 2");
  EXPECT_EQ(user_error_of([&] { Layout::parse("m0", m, 1); }),
            "cannot read the layout 'm0': expected [axis, ...] or (pieces, ...)");
  EXPECT_EQ(user_error_of([&] { Layout::parse("[-] partial(m0, m0)", m, 1); }),
            "cannot read the layout '[-] partial(m0, m0)': a mesh axis is listed twice in "
            "partial(...)");
  EXPECT_EQ(user_error_of([&] { Layout::parse("[m0, m0]", m, 2); }),
            "layout [m0, m0] splits two dimensions over mesh axis m0");
}

sem::Tensor iota(const std::vector<int64_t>& shape) {
  sem::Tensor t = sem::Tensor::empty(DType::f64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i));
  return t;
}

TEST(ShardData, ShardTakesEachRanksBlockAndUnshardReassembles) {
  Mesh m{{2, 2}, {}};
  sem::Tensor g = iota({4, 6});
  Layout l{{1, 0}, {}};
  std::vector<sem::Tensor> s = shard(g, l, m);
  ASSERT_EQ(s.size(), 4u);
  // Rank 1 = (0, 1): rows 2..3 (axis 1 coordinate 1), columns 0..2 (axis 0 coordinate 0).
  EXPECT_EQ(s[1].shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(s[1].get(0), 12);
  EXPECT_EQ(s[1].get(5), 20);
  sem::Tensor back = unshard(s, l, m);
  for (int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(back.get(i), g.get(i));
  // Partial: coordinate 0 of the partial axis holds the value, the rest zeros; the sum is g.
  Layout p{{0, -1}, {1}};
  std::vector<sem::Tensor> ps = shard(g, p, m);
  EXPECT_EQ(ps[1].get(0), 0);
  EXPECT_EQ(ps[0].get(0), 0);
  EXPECT_EQ(ps[2].get(0), 12);
  ps[1].set(0, 5);
  ps[0].set(0, -5);
  sem::Tensor back2 = unshard(ps, p, m);
  for (int64_t i = 0; i < g.numel(); ++i) EXPECT_EQ(back2.get(i), g.get(i));
}

// Every block of every position in tensors of rank 0 to 4 (whole trailing dimensions, which
// copy as one run, and partial ones): slice_block reads, and write_block writes, the elements
// the row-major index arithmetic names, and nothing else.
TEST(ShardData, BlocksReadAndWriteExactlyTheirElements) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {7}, {3, 5}, {4, 1, 6}, {2, 3, 4, 5}};
  for (const auto& outer : shapes) {
    const size_t r = outer.size();
    const sem::Tensor t = iota(outer);
    // Blocks: for each dimension a (offset, extent) from {whole, first part, interior, last}.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> choices(r);
    for (size_t d = 0; d < r; ++d) {
      const int64_t n = outer[d];
      choices[d] = {{0, n}, {0, (n + 1) / 2}, {n / 3, n - n / 3 - n / 4}, {n - 1, 1}, {n / 2, 0}};
    }
    std::vector<size_t> pick(r, 0);
    for (;;) {
      std::vector<int64_t> off(r), shape(r);
      for (size_t d = 0; d < r; ++d) std::tie(off[d], shape[d]) = choices[d][pick[d]];
      std::vector<int64_t> stride(r, 1);
      for (size_t d = r; d-- > 1;) stride[d - 1] = stride[d] * outer[d];
      const sem::Tensor b = slice_block(t, off, shape);
      ASSERT_EQ(b.shape(), shape);
      sem::Tensor w = sem::Tensor::zeros(DType::f64, outer);
      sem::Tensor marks = sem::Tensor::zeros(DType::f64, shape);
      for (int64_t i = 0; i < marks.numel(); ++i) marks.set(i, -1.0 - static_cast<double>(i));
      write_block(w, marks, off);
      std::vector<int64_t> idx(r, 0);
      int64_t inside = 0;
      for (int64_t i = 0; i < b.numel(); ++i) {
        int64_t flat = 0;
        for (size_t d = 0; d < r; ++d) flat += (off[d] + idx[d]) * stride[d];
        ASSERT_EQ(b.get(i), t.get(flat)) << "element " << i;
        ASSERT_EQ(w.get(flat), -1.0 - static_cast<double>(i));
        ++inside;
        for (size_t d = r; d-- > 0;) {
          if (++idx[d] < shape[d]) break;
          idx[d] = 0;
        }
      }
      int64_t written = 0;
      for (int64_t i = 0; i < w.numel(); ++i) written += w.get(i) != 0;
      EXPECT_EQ(written, inside) << "write_block touched elements outside the block";
      size_t d = r;
      while (d > 0 && ++pick[d - 1] == choices[d - 1].size()) pick[--d] = 0;
      if (d == 0) break;
    }
  }
}

}  // namespace
}  // namespace spora::parallel
