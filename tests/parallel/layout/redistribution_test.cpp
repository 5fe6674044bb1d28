// Redistribution plans: the alpha-beta closed forms of each step, the chosen plans on 1-D and
// 2-D meshes, and the property that running a plan's steps on every rank's data turns shards of
// layout A into shards of layout B, for every pair of layouts of several shapes and meshes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "lang/diagnostics.h"
#include "parallel/layout/layout.h"
#include "parallel/layout/shard_data.h"

namespace spora::parallel {
namespace {

using K = RedistStep::Kind;

CommModel model(int axes, double alpha, double bw) {
  CommModel c;
  for (int i = 0; i < axes; ++i) c.axes.push_back({alpha * (i + 1), bw / (i + 1)});
  return c;
}

TEST(CommModel, ClosedFormsOfRingCollectives) {
  Mesh m{{4, 2}, {}};
  CommModel c = model(2, 1e-5, 1e9);
  const double n = 4096;
  const double a0 = 1e-5, b0 = 1e9, a1 = 2e-5, b1 = 5e8;
  EXPECT_DOUBLE_EQ(c.time({K::AllGather, 0, -1, 0, {}}, 4096, m), 3 * (a0 + n / b0));
  EXPECT_DOUBLE_EQ(c.time({K::ReduceScatter, 0, -1, 0, {}}, 4096, m), 3 * (a0 + n / (4 * b0)));
  EXPECT_DOUBLE_EQ(c.time({K::AllReduce, -1, -1, 0, {}}, 4096, m), 6 * (a0 + n / (4 * b0)));
  EXPECT_DOUBLE_EQ(c.time({K::AllToAll, 0, 1, 0, {}}, 4096, m), 3 * (a0 + n / (4 * b0)));
  EXPECT_DOUBLE_EQ(c.time({K::Slice, 0, -1, 0, {}}, 4096, m), 0);
  EXPECT_DOUBLE_EQ(c.time({K::AllReduce, -1, -1, 1, {}}, 4096, m), 2 * (a1 + n / (2 * b1)));
  EXPECT_DOUBLE_EQ(c.time({K::AllGather, 0, -1, 1, {}}, 4096, m), 1 * (a1 + n / b1));
  EXPECT_EQ(CommModel::bytes_sent({K::AllGather, 0, -1, 0, {}}, 4096, m), 3 * 4096);
  EXPECT_EQ(CommModel::bytes_sent({K::AllReduce, -1, -1, 0, {}}, 4096, m), 2 * 3 * 1024);
  EXPECT_EQ(CommModel::bytes_sent({K::ReduceScatter, 0, -1, 1, {}}, 4096, m), 2048);
  // A per-call cost (collective_overhead) is paid once per step, not per ring step; a slice
  // is free.
  CommModel called = model(2, 1e-5, 1e9);
  called.axes[0].call_s = 3e-5;
  EXPECT_DOUBLE_EQ(called.time({K::AllReduce, -1, -1, 0, {}}, 4096, m),
                   3e-5 + 6 * (a0 + n / (4 * b0)));
  EXPECT_DOUBLE_EQ(called.time({K::AllGather, 0, -1, 0, {}}, 4096, m), 3e-5 + 3 * (a0 + n / b0));
  EXPECT_DOUBLE_EQ(called.time({K::Slice, 0, -1, 0, {}}, 4096, m), 0);
  EXPECT_DOUBLE_EQ(called.time({K::AllGather, 0, -1, 1, {}}, 4096, m), 1 * (a1 + n / b1));
  // An axis the model does not list uses the defaults (5 us, 10 GB/s).
  CommModel none;
  EXPECT_DOUBLE_EQ(none.time({K::AllGather, 0, -1, 1, {}}, 1000, m), 5e-6 + 1000 / 10e9);
}

struct Case {
  Layout from, to;
  std::vector<RedistStep::Kind> kinds;
  double seconds;
};

TEST(Plan, SingleStepPlansOnA1DMeshCostTheClosedForm) {
  Mesh m{{4}, {}};
  const double a = 1e-5, B = 1e9;
  CommModel c = model(1, a, B);
  const std::vector<int64_t> shape{8, 16};
  const double full = 8 * 16 * 4, quarter = full / 4;
  const std::vector<Case> cases = {
      {Layout{{0, -1}, {}}, Layout{{-1, -1}, {}}, {K::AllGather}, 3 * (a + quarter / B)},
      {Layout{{-1, -1}, {}}, Layout{{-1, 0}, {}}, {K::Slice}, 0},
      {Layout{{0, -1}, {}}, Layout{{-1, 0}, {}}, {K::AllToAll}, 3 * (a + quarter / (4 * B))},
      {Layout{{-1, -1}, {0}}, Layout{{-1, -1}, {}}, {K::AllReduce}, 6 * (a + full / (4 * B))},
      {Layout{{-1, -1}, {0}}, Layout{{0, -1}, {}}, {K::ReduceScatter}, 3 * (a + full / (4 * B))},
      {Layout{{0, -1}, {}}, Layout{{0, -1}, {}}, {}, 0},
  };
  for (const Case& k : cases) {
    RedistPlan p = plan_redistribution(k.from, k.to, shape, 4, m, c);
    ASSERT_EQ(p.steps.size(), k.kinds.size())
        << k.from.to_string() << " -> " << k.to.to_string() << ": " << p.to_string();
    for (size_t i = 0; i < k.kinds.size(); ++i) EXPECT_EQ(p.steps[i].kind, k.kinds[i]);
    EXPECT_NEAR(p.seconds, k.seconds, 1e-15) << p.to_string();
  }
  RedistPlan p = plan_redistribution(Layout{{0, -1}, {}}, Layout{{-1, 0}, {}}, shape, 4, m, c);
  EXPECT_EQ(p.to_string(), "all_to_all(dim 0 -> dim 1, m0)");
  EXPECT_EQ(p.steps[0].shape_before, (std::vector<int64_t>{2, 16}));
  EXPECT_EQ(p.bytes_moved, 3 * 128 / 4);  // 3 of the 4 quarters of the 128-byte shard
  EXPECT_EQ(
      plan_redistribution(Layout{{0, -1}, {}}, Layout{{0, -1}, {}}, shape, 4, m, c).to_string(),
      "identity");
}

TEST(Plan, PartialToSplitIsOneReduceScatterNotAllReducePlusSlice) {
  // reduce-scatter (p-1)(a + n/pB) beats all-reduce 2(p-1)(a + n/pB) + a free slice.
  Mesh m{{8}, {}};
  CommModel c = model(1, 1e-6, 1e10);
  RedistPlan p = plan_redistribution(Layout{{-1, -1}, {0}}, Layout{{-1, 0}, {}}, {64, 64}, 4, m, c);
  EXPECT_EQ(p.to_string(), "reduce_scatter(dim 1, m0)");
  EXPECT_NEAR(p.seconds, 7 * (1e-6 + 64 * 64 * 4 / (8 * 1e10)), 1e-15);
}

TEST(Plan, TwoDimensionalMeshPlans) {
  Mesh m{{2, 4}, {}};
  CommModel c = model(2, 1e-5, 1e9);
  const std::vector<int64_t> shape{8, 8};
  // Swapping the axes of two dims: every plan's cost is the sum of its steps' closed forms.
  RedistPlan p = plan_redistribution(Layout{{0, 1}, {}}, Layout{{1, 0}, {}}, shape, 4, m, c);
  ASSERT_FALSE(p.steps.empty());
  double total = 0;
  Layout l{{0, 1}, {}};
  for (const RedistStep& s : p.steps) {
    EXPECT_EQ(s.shape_before, l.local_shape(shape, m));
    int64_t bytes = 4;
    for (int64_t d : s.shape_before) bytes *= d;
    total += c.time(s, bytes, m);
    l = apply_step(l, s);
  }
  EXPECT_EQ(l, (Layout{{1, 0}, {}}));
  EXPECT_NEAR(p.seconds, total, 1e-15);
  // Partial over both axes to replicated: two all-reduces, the cheaper first... in either order
  // the first one reduces the full tensor; the plan is their sum.
  RedistPlan ar =
      plan_redistribution(Layout{{-1, -1}, {0, 1}}, Layout{{-1, -1}, {}}, shape, 4, m, c);
  const double n = 256;
  const double two_allreduce = 2 * (1e-5 + n / (2 * 1e9)) + 6 * (2e-5 + n / (4 * 5e8));
  EXPECT_LE(ar.seconds, two_allreduce + 1e-15);
  // Reduce-scatter then all-gather on an axis is what ring all-reduce does; the planner may find
  // such a cheaper route, never a dearer one.
  EXPECT_GT(ar.seconds, 0);
  // Gathering over both axes.
  RedistPlan g = plan_redistribution(Layout{{0, 1}, {}}, Layout{{-1, -1}, {}}, shape, 4, m, c);
  EXPECT_EQ(g.steps.size(), 2u);
}

TEST(Plan, Errors) {
  Mesh m{{4}, {}};
  CommModel c;
  auto err = [&](const Layout& a, const Layout& b, std::vector<int64_t> shape) {
    try {
      plan_redistribution(a, b, shape, 4, m, c);
    } catch (const lang::UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(err(Layout{{-1}, {}}, Layout{{-1}, {0}}, {8}),
            "cannot redistribute [-] to [-] partial(m0): the target is partial over mesh axis m0 "
            "and the source is not");
  EXPECT_EQ(err(Layout{{-1}, {}}, Layout{{0}, {}}, {6}),
            "cannot split dimension 0 of size 6 over mesh axis 0 of 4 devices");
}

// ---- the property: plans move the data right ------------------------------------------------

// Every layout of a rank-r tensor on the mesh: each axis unused, splitting one dim, or partial.
std::vector<Layout> all_layouts(int r, const Mesh& m) {
  std::vector<Layout> out;
  std::vector<int> choice(static_cast<size_t>(m.ndim()), -1);  // -1 unused, r partial, else dim
  std::function<void(int)> go = [&](int a) {
    if (a == m.ndim()) {
      Layout l = Layout::replicated(r);
      for (int x = 0; x < m.ndim(); ++x) {
        const int c = choice[static_cast<size_t>(x)];
        if (c == r) l.partial.push_back(x);
        if (c >= 0 && c < r) {
          if (l.tensor_map[static_cast<size_t>(c)] >= 0) return;
          l.tensor_map[static_cast<size_t>(c)] = x;
        }
      }
      out.push_back(l);
      return;
    }
    for (int c = -1; c <= r; ++c) {
      choice[static_cast<size_t>(a)] = c;
      go(a + 1);
    }
  };
  go(0);
  return out;
}

// Every rank's local tensor of a value in layout l with random partial terms: for each
// coordinate combination along the partial axes a random term T_c; the value is their sum.
std::vector<sem::Tensor> random_state(const sem::Tensor& value, const Layout& l, const Mesh& m,
                                      std::mt19937& rng) {
  Layout plain = l;
  plain.partial.clear();
  const int64_t n = value.numel();
  std::map<std::vector<int64_t>, sem::Tensor> terms;
  sem::Tensor rest = value.clone();
  std::vector<std::vector<int64_t>> keys;
  for (int64_t r = 0; r < m.size(); ++r) {
    std::vector<int64_t> key;
    for (int a : l.partial) key.push_back(m.coords(r)[static_cast<size_t>(a)]);
    if (terms.count(key)) continue;
    sem::Tensor t = sem::Tensor::empty(DType::f64, value.shape());
    for (int64_t i = 0; i < n; ++i)
      t.set(i, static_cast<double>(std::uniform_int_distribution<int>(-50, 50)(rng)));
    terms[key] = t;
    keys.push_back(key);
  }
  // The last term makes the sum exact.
  sem::Tensor& last = terms[keys.back()];
  for (int64_t i = 0; i < n; ++i) {
    double s = 0;
    for (const auto& k : keys)
      if (k != keys.back()) s += terms[k].get(i);
    last.set(i, value.get(i) - s);
  }
  std::vector<sem::Tensor> out;
  std::map<std::vector<int64_t>, std::vector<sem::Tensor>> sharded;
  for (const auto& k : keys) sharded[k] = shard(terms[k], plain, m);
  for (int64_t r = 0; r < m.size(); ++r) {
    std::vector<int64_t> key;
    for (int a : l.partial) key.push_back(m.coords(r)[static_cast<size_t>(a)]);
    out.push_back(sharded[key][static_cast<size_t>(r)]);
  }
  return out;
}

int check_all_pairs(const Mesh& m, const std::vector<int64_t>& shape, std::mt19937& rng) {
  CommModel c = model(m.ndim(), 2e-6, 5e9);
  sem::Tensor value = sem::Tensor::empty(DType::f64, shape);
  for (int64_t i = 0; i < value.numel(); ++i)
    value.set(i, static_cast<double>(std::uniform_int_distribution<int>(-100, 100)(rng)));
  int checked = 0;
  const std::vector<Layout> layouts = all_layouts(static_cast<int>(shape.size()), m);
  for (const Layout& from : layouts) {
    bool fits = true;
    try {
      from.validate(m, shape);
    } catch (const lang::UserError&) {
      fits = false;
    }
    if (!fits) continue;
    const std::vector<sem::Tensor> start = random_state(value, from, m, rng);
    for (const Layout& to : layouts) {
      bool possible = true;
      for (int a : to.partial) possible = possible && from.has_partial(a);
      try {
        to.validate(m, shape);
      } catch (const lang::UserError&) {
        possible = false;
      }
      if (!possible) continue;
      const RedistPlan plan = plan_redistribution(from, to, shape, 8, m, c);
      const std::vector<sem::Tensor> got = run_plan(start, from, plan, m);
      const std::string what = from.to_string() + " -> " + to.to_string() + " on " + m.to_string() +
                               " shape " + sem::shape_str(shape) + ": " + plan.to_string();
      // The reassembled value is unchanged, and without partial sums every rank holds exactly
      // its shard of the target layout.
      const sem::Tensor back = unshard(got, to, m);
      for (int64_t i = 0; i < value.numel(); ++i)
        if (back.get(i) != value.get(i)) {
          ADD_FAILURE() << what << ": element " << i << " is " << back.get(i) << ", not "
                        << value.get(i);
          return checked;
        }
      const std::vector<int64_t> local = to.local_shape(shape, m);
      Layout kept = to;
      for (size_t r = 0; r < got.size(); ++r) EXPECT_EQ(got[r].shape(), local) << what;
      if (to.partial.empty()) {
        const std::vector<sem::Tensor> want = shard(value, to, m);
        for (size_t r = 0; r < got.size(); ++r)
          for (int64_t i = 0; i < want[r].numel(); ++i)
            if (got[r].get(i) != want[r].get(i)) {
              ADD_FAILURE() << what << ": rank " << r << " element " << i;
              return checked;
            }
      }
      // Its cost is the sum of its steps' closed forms, and no dearer than the obvious plan
      // (all-reduce every partial axis, gather every split, then slice).
      double sum = 0;
      Layout l = from;
      for (const RedistStep& s : plan.steps) {
        int64_t bytes = 8;
        for (int64_t d : l.local_shape(shape, m)) bytes *= d;
        sum += c.time(s, bytes, m);
        l = apply_step(l, s);
      }
      EXPECT_EQ(l, to) << what;
      EXPECT_NEAR(plan.seconds, sum, 1e-12) << what;
      double naive = 0;
      l = from;
      auto step = [&](RedistStep s) {
        int64_t bytes = 8;
        for (int64_t d : l.local_shape(shape, m)) bytes *= d;
        naive += c.time(s, bytes, m);
        l = apply_step(l, s);
      };
      for (int a : from.partial)
        if (!to.has_partial(a)) step({K::AllReduce, -1, -1, a, {}});
      for (int d = 0; d < from.rank(); ++d)
        if (from.tensor_map[static_cast<size_t>(d)] >= 0)
          step({K::AllGather, d, -1, from.tensor_map[static_cast<size_t>(d)], {}});
      EXPECT_LE(plan.seconds, naive + 1e-12) << what;
      ++checked;
    }
  }
  return checked;
}

TEST(Plan, EveryPairOfLayoutsMovesTheDataRight) {
  std::mt19937 rng(1234);
  int n = 0;
  n += check_all_pairs(Mesh{{2}, {}}, {4, 6}, rng);
  n += check_all_pairs(Mesh{{3}, {}}, {6, 3}, rng);
  n += check_all_pairs(Mesh{{2, 2}, {}}, {4, 2, 6}, rng);
  n += check_all_pairs(Mesh{{2, 3}, {}}, {6, 12}, rng);
  n += check_all_pairs(Mesh{{2, 3}, {}}, {6, 4}, rng);  // dim 1 cannot split over axis 1
  n += check_all_pairs(Mesh{{2, 2, 2}, {}}, {4, 4}, rng);
  // Random shapes: rank 1 to 3, dims from {1, 2, 3, 4, 6, 12}.
  const std::vector<int64_t> sizes{1, 2, 3, 4, 6, 12};
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<int64_t> shape;
    const int r = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int d = 0; d < r; ++d)
      shape.push_back(sizes[std::uniform_int_distribution<size_t>(0, sizes.size() - 1)(rng)]);
    n += check_all_pairs(trial % 2 ? Mesh{{2, 2}, {}} : Mesh{{3, 2}, {}}, shape, rng);
  }
  EXPECT_GT(n, 1500);
  std::printf("checked %d plans\n", n);
}

// redistribution_seconds_from prices every target of one source in one search: for every pair
// of layouts it gives plan_redistribution's seconds, and it lists exactly the targets that
// plan_redistribution can reach (the others throw).
TEST(Plan, SecondsFromOneSourceMatchEveryPlan) {
  int n = 0;
  auto check = [&](const Mesh& m, const std::vector<int64_t>& shape) {
    const CommModel c = model(m.ndim(), 2e-6, 5e9);
    const std::vector<Layout> layouts = all_layouts(static_cast<int>(shape.size()), m);
    for (const Layout& from : layouts) {
      std::vector<std::pair<Layout, double>> all;
      try {
        all = redistribution_seconds_from(from, shape, 4, m, c);
      } catch (const lang::UserError&) {
        EXPECT_THROW(plan_redistribution(from, from, shape, 4, m, c), lang::UserError);
        continue;
      }
      for (const Layout& to : layouts) {
        const auto at = std::find_if(all.begin(), all.end(),
                                     [&](const auto& p) { return p.first == to; });
        const std::string what = from.to_string() + " -> " + to.to_string() + " on " +
                                 m.to_string() + " shape " + sem::shape_str(shape);
        try {
          const RedistPlan plan = plan_redistribution(from, to, shape, 4, m, c);
          ASSERT_NE(at, all.end()) << what;
          EXPECT_NEAR(at->second, plan.seconds, 1e-12 * std::max(1e-6, plan.seconds)) << what;
          ++n;
        } catch (const lang::UserError&) {
          EXPECT_EQ(at, all.end()) << what;
        }
      }
    }
  };
  check(Mesh{{2}, {}}, {4, 6});
  check(Mesh{{2, 2}, {}}, {4, 2, 6});
  check(Mesh{{2, 3}, {}}, {6, 4});
  check(Mesh{{2, 2, 2}, {}}, {4, 4, 2});
  check(Mesh{{4, 2}, {}}, {8, 3, 4});
  EXPECT_GT(n, 1000);
}

}  // namespace
}  // namespace spora::parallel
