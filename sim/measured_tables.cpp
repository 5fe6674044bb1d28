// Measured tables: interpolation, reading and writing (measured_tables.h).
#include "sim/measured_tables.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

namespace spora::sim {

namespace {

// The grid values around x and the weight of the upper one, in log2 space, clamped.
struct Bracket {
  std::size_t lo = 0, hi = 0;
  double w = 0;
};

Bracket bracket(const std::vector<double>& grid, double x) {
  if (grid.size() == 1 || x <= grid.front()) return {0, 0, 0};
  if (x >= grid.back()) return {grid.size() - 1, grid.size() - 1, 0};
  const auto up = std::upper_bound(grid.begin(), grid.end(), x);
  const std::size_t hi = static_cast<std::size_t>(up - grid.begin()), lo = hi - 1;
  return {lo, hi, std::log2(x / grid[lo]) / std::log2(grid[hi] / grid[lo])};
}

std::vector<double> sorted_unique(const std::set<double>& s) { return {s.begin(), s.end()}; }

std::size_t index_of(const std::vector<double>& v, double x) {
  return static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
}

}  // namespace

double GemmTable::rate_at(double mm, double nn, double kk) const {
  if (empty()) return 0;
  const Bracket bm = bracket(m, mm), bn = bracket(n, nn), bk = bracket(k, kk);
  double r = 0;
  for (const auto& [i, wi] : {std::pair{bm.lo, 1 - bm.w}, std::pair{bm.hi, bm.w}})
    for (const auto& [j, wj] : {std::pair{bn.lo, 1 - bn.w}, std::pair{bn.hi, bn.w}})
      for (const auto& [l, wl] : {std::pair{bk.lo, 1 - bk.w}, std::pair{bk.hi, bk.w}})
        r += wi * wj * wl * rate[(i * n.size() + j) * k.size() + l];
  return r;
}

GemmTable GemmTable::from_rows(const std::vector<std::array<double, 4>>& rows) {
  std::set<double> ms, ns, ks;
  for (const auto& row : rows) {
    for (double v : row)
      if (!(v > 0))
        throw std::invalid_argument(fmt::format("expected positive numbers, got {}", v));
    ms.insert(row[0]), ns.insert(row[1]), ks.insert(row[2]);
  }
  GemmTable t{sorted_unique(ms), sorted_unique(ns), sorted_unique(ks), {}};
  const std::size_t size = t.m.size() * t.n.size() * t.k.size();
  if (rows.size() != size)
    throw std::invalid_argument(
        fmt::format("expected a full grid of {} x {} x {} = {} rows [m, n, k, rate], got {}",
                    t.m.size(), t.n.size(), t.k.size(), size, rows.size()));
  t.rate.assign(size, 0);
  for (const auto& row : rows) {
    double& slot =
        t.rate[(index_of(t.m, row[0]) * t.n.size() + index_of(t.n, row[1])) * t.k.size() +
               index_of(t.k, row[2])];
    if (slot > 0)
      throw std::invalid_argument(
          fmt::format("the point m {} n {} k {} is listed twice", row[0], row[1], row[2]));
    slot = row[3];
  }
  return t;
}

std::vector<std::array<double, 4>> GemmTable::rows() const {
  std::vector<std::array<double, 4>> out;
  for (std::size_t i = 0; i < m.size(); ++i)
    for (std::size_t j = 0; j < n.size(); ++j)
      for (std::size_t l = 0; l < k.size(); ++l)
        out.push_back({m[i], n[j], k[l], rate[(i * n.size() + j) * k.size() + l]});
  return out;
}

const std::vector<std::string>& ComputeTables::gemm_table_names() {
  static const std::vector<std::string> names{"gemm", "conv", "conv_input_grad",
                                              "conv_weight_grad"};
  return names;
}

GemmTable* ComputeTables::gemm_table(std::string_view name) {
  return const_cast<GemmTable*>(std::as_const(*this).gemm_table(name));
}

const GemmTable* ComputeTables::gemm_table(std::string_view name) const {
  if (name == "gemm") return &gemm;
  if (name == "conv") return &conv;
  if (name == "conv_input_grad") return &conv_input_grad;
  if (name == "conv_weight_grad") return &conv_weight_grad;
  return nullptr;
}

double RateTable::rate_at(double b) const {
  if (empty()) return 0;
  const Bracket br = bracket(bytes, b);
  return (1 - br.w) * rate[br.lo] + br.w * rate[br.hi];
}

namespace {

// Rows [bytes, value], both positive, sorted by bytes, each size once: the two columns.
std::array<std::vector<double>, 2> by_bytes(const std::vector<std::array<double, 2>>& rows) {
  std::vector<std::array<double, 2>> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  std::array<std::vector<double>, 2> cols;
  for (const auto& [b, v] : sorted) {
    if (!(b > 0) || !(v > 0))
      throw std::invalid_argument(fmt::format("expected positive numbers, got [{}, {}]", b, v));
    if (!cols[0].empty() && cols[0].back() == b)
      throw std::invalid_argument(fmt::format("{} bytes is listed twice", b));
    cols[0].push_back(b);
    cols[1].push_back(v);
  }
  return cols;
}

}  // namespace

RateTable RateTable::from_rows(const std::vector<std::array<double, 2>>& rows) {
  auto [bytes, rate] = by_bytes(rows);
  return {std::move(bytes), std::move(rate)};
}

double SyncTable::extra_at(double g) const {
  if (empty()) return 0;
  if (g <= grain.front()) return extra.front();
  if (g >= grain.back()) return extra.back();
  const std::size_t hi = static_cast<std::size_t>(
                        std::upper_bound(grain.begin(), grain.end(), g) - grain.begin()),
                    lo = hi - 1;
  const double w = (g - grain[lo]) / (grain[hi] - grain[lo]);
  return (1 - w) * extra[lo] + w * extra[hi];
}

SyncTable SyncTable::from_rows(int ranks, const std::vector<std::array<double, 2>>& rows) {
  if (ranks < 2) throw std::invalid_argument(fmt::format("ranks must be at least 2, got {}", ranks));
  std::vector<std::array<double, 2>> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  SyncTable t;
  t.ranks = ranks;
  for (const auto& [g, e] : sorted) {
    if (!(g >= 0) || !std::isfinite(e))
      throw std::invalid_argument(
          fmt::format("expected a grain >= 0 and a finite extra, got [{}, {}]", g, e));
    if (!t.grain.empty() && t.grain.back() == g)
      throw std::invalid_argument(fmt::format("the grain {} is listed twice", g));
    t.grain.push_back(g);
    t.extra.push_back(e);
  }
  return t;
}

double CollectiveTable::seconds_at(double b) const {
  if (empty()) return 0;
  const std::size_t n = bytes.size();
  if (b <= bytes.front()) return seconds.front();
  if (b >= bytes.back()) {
    if (n < 2) return seconds.back();
    const double slope = (seconds[n - 1] - seconds[n - 2]) / (bytes[n - 1] - bytes[n - 2]);
    return seconds.back() + std::max(0.0, slope) * (b - bytes.back());
  }
  const std::size_t hi = static_cast<std::size_t>(
                        std::upper_bound(bytes.begin(), bytes.end(), b) - bytes.begin()),
                    lo = hi - 1;
  const double w = std::log2(b / bytes[lo]) / std::log2(bytes[hi] / bytes[lo]);
  return (1 - w) * seconds[lo] + w * seconds[hi];
}

CollectiveTable CollectiveTable::from_rows(const std::vector<std::array<double, 2>>& rows) {
  auto [bytes, seconds] = by_bytes(rows);
  return {std::move(bytes), std::move(seconds)};
}

bool known_collective_table(const std::string& name) {
  std::string base = name;
  auto strip = [&](const std::string& suffix) {
    if (base.size() > suffix.size() && base.ends_with(suffix)) {
      base.resize(base.size() - suffix.size());
      return true;
    }
    return false;
  };
  strip("_b2b");
  if (strip("_contiguous")) return base == "reduce_scatter" || base == "all_gather";
  return base == "all_reduce" || base == "reduce_scatter" || base == "all_gather";
}

const CollectiveTable* MeasuredTables::collective(const std::string& primitive, int ranks,
                                                  bool contiguous, bool back_to_back) const {
  const bool blocks = contiguous && primitive != "all_reduce";
  std::vector<std::string> names;
  if (blocks && back_to_back) names.push_back(primitive + "_contiguous_b2b");
  if (blocks) names.push_back(primitive + "_contiguous");
  if (back_to_back) names.push_back(primitive + "_b2b");
  names.push_back(primitive);
  for (const std::string& name : names) {
    const auto p = collectives.find(name);
    if (p == collectives.end()) continue;
    const auto r = p->second.find(ranks);
    if (r != p->second.end() && !r->second.empty()) return &r->second;
  }
  return nullptr;
}

std::vector<std::pair<double, const ComputeTables*>> MeasuredTables::by_reuse_distance() const {
  std::vector<std::pair<double, const ComputeTables*>> out;
  out.push_back({std::max(reuse_distance, 0.0), this});
  for (const auto& [d, t] : at_reuse_distance) out.push_back({d, &t});
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

MeasuredTables read_measured_tables(
    const YAML::Node& node,
    const std::function<void(const std::string&, const std::string&)>& fail) {
  MeasuredTables t;
  if (!node.IsMap())
    fail("",
         "expected a map (cores, gemm, conv, conv_input_grad, conv_weight_grad, bandwidth, "
         "reuse_distance, at_reuse_distance, oversubscribed, collectives)");
  auto number = [&](const YAML::Node& n, const std::string& where) {
    double v = 0;
    if (n.IsScalar()) {
      const std::string& s = n.Scalar();
      const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && ptr == s.data() + s.size()) return v;
    }
    fail(where, "expected a number");
    return 0.0;
  };
  auto rows = [&]<std::size_t N>(const YAML::Node& list, const std::string& where) {
    std::vector<std::array<double, N>> out;
    if (!list.IsSequence() || list.size() == 0) fail(where, "expected a list of rows");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string at = fmt::format("{}[{}]", where, i);
      if (!list[i].IsSequence() || list[i].size() != N)
        fail(at, fmt::format("expected a row of {} numbers", N));
      std::array<double, N> row{};
      for (std::size_t c = 0; c < N; ++c) row[c] = number(list[i][c], at);
      out.push_back(row);
    }
    return out;
  };
  // gemm, conv and bandwidth into `c`; false for another key.
  auto compute_table = [&](const std::string& key, const YAML::Node& value,
                           const std::string& where, ComputeTables& c) {
    if (GemmTable* g = c.gemm_table(key)) {
      *g = GemmTable::from_rows(rows.template operator()<4>(value, where));
      return true;
    }
    if (key != "bandwidth") return false;
    if (!value.IsMap()) fail(where, "expected a map: op class -> rows [bytes, bytes/s]");
    for (const auto& cls : value) {
      const std::string at = where + "." + cls.first.Scalar();
      try {
        c.bandwidth[cls.first.Scalar()] =
            RateTable::from_rows(rows.template operator()<2>(cls.second, at));
      } catch (const std::invalid_argument& e) {
        fail(at, e.what());
      }
    }
    return true;
  };
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    try {
      if (compute_table(key, item.second, key, t)) continue;
      if (key == "cores") {
        const double c = number(item.second, key);
        if (c < 1 || c != std::floor(c)) fail(key, "expected a positive integer");
        t.cores = static_cast<int>(c);
      } else if (key == "reuse_distance") {
        t.reuse_distance = number(item.second, key);
        if (!(t.reuse_distance >= 0)) fail(key, "expected bytes >= 0");
      } else if (key == "at_reuse_distance") {
        if (!item.second.IsMap())
          fail(key,
               "expected a map: reuse distance in bytes -> {gemm, conv, conv_input_grad, "
               "conv_weight_grad, bandwidth}");
        for (const auto& level : item.second) {
          const std::string where = key + "." + level.first.Scalar();
          const double d = number(level.first, where);
          if (!(d >= 0)) fail(where, "expected a reuse distance in bytes >= 0");
          if (t.at_reuse_distance.count(d)) fail(where, "this distance is listed twice");
          if (!level.second.IsMap())
            fail(where,
                 "expected a map (gemm, conv, conv_input_grad, conv_weight_grad, bandwidth)");
          ComputeTables& c = t.at_reuse_distance[d];
          for (const auto& f : level.second) {
            const std::string name = f.first.Scalar(), at = where + "." + name;
            try {
              if (!compute_table(name, f.second, at, c))
                fail(at,
                     "unknown field (known: gemm, conv, conv_input_grad, conv_weight_grad, "
                     "bandwidth)");
            } catch (const std::invalid_argument& e) {
              fail(at, e.what());
            }
          }
        }
      } else if (key == "oversubscribed") {
        const YAML::Node& o = item.second;
        if (!o.IsMap() || !o["ranks"] || !o["sync"])
          fail(key, "expected a map with ranks and sync (rows [grain s, extra s])");
        for (const auto& f : o)
          if (f.first.Scalar() != "ranks" && f.first.Scalar() != "sync")
            fail(key + "." + f.first.Scalar(), "unknown field (known: ranks, sync)");
        const double r = number(o["ranks"], key + ".ranks");
        if (r != std::floor(r)) fail(key + ".ranks", "expected an integer");
        try {
          t.oversubscribed = SyncTable::from_rows(
              static_cast<int>(r), rows.template operator()<2>(o["sync"], key + ".sync"));
        } catch (const std::invalid_argument& e) {
          fail(key + ".sync", e.what());
        }
      } else if (key == "collectives") {
        if (!item.second.IsMap())
          fail(key, "expected a map: primitive -> rows [ranks, bytes, seconds]");
        for (const auto& prim : item.second) {
          const std::string name = prim.first.Scalar(), where = key + "." + name;
          if (!known_collective_table(name))
            fail(where,
                 "unknown primitive (known: all_reduce, reduce_scatter, all_gather; the last "
                 "two also with _contiguous; any of them also with _b2b)");
          std::map<int, std::vector<std::array<double, 2>>> by_ranks;
          for (const auto& r : rows.template operator()<3>(prim.second, where)) {
            if (r[0] < 2 || r[0] != std::floor(r[0]))
              fail(where, fmt::format("expected ranks to be an integer of at least 2, got {}", r[0]));
            by_ranks[static_cast<int>(r[0])].push_back({r[1], r[2]});
          }
          for (const auto& [ranks, rs] : by_ranks) {
            try {
              t.collectives[name][ranks] = CollectiveTable::from_rows(rs);
            } catch (const std::invalid_argument& e) {
              fail(where, fmt::format("{} ranks: {}", ranks, e.what()));
            }
          }
        }
      } else {
        fail(key,
             "unknown field (known: cores, gemm, conv, conv_input_grad, conv_weight_grad, "
             "bandwidth, reuse_distance, at_reuse_distance, oversubscribed, collectives)");
      }
    } catch (const std::invalid_argument& e) {
      fail(key, e.what());
    }
  }
  if (!t.at_reuse_distance.empty() && t.reuse_distance < 0)
    fail("at_reuse_distance", "needs reuse_distance: the distance of the tables outside it");
  if (t.at_reuse_distance.count(std::max(t.reuse_distance, 0.0)))
    fail("at_reuse_distance", "lists reuse_distance's own distance again");
  return t;
}

namespace {

// gemm, conv and bandwidth, each key indented by `pad`.
std::string compute_tables_yaml(const ComputeTables& t, const std::string& pad) {
  std::string y;
  for (const std::string& name : ComputeTables::gemm_table_names()) {
    const GemmTable* table = t.gemm_table(name);
    if (table->empty()) continue;
    y += fmt::format("{}{}:\n", pad, name);
    for (const auto& r : table->rows())
      y += fmt::format("{}  - [{}, {}, {}, {:.6g}]\n", pad, r[0], r[1], r[2], r[3]);
  }
  if (!t.bandwidth.empty()) {
    y += pad + "bandwidth:\n";
    for (const auto& [cls, table] : t.bandwidth) {
      y += fmt::format("{}  {}: [", pad, cls);
      for (std::size_t i = 0; i < table.bytes.size(); ++i)
        y += fmt::format("{}[{}, {:.6g}]", i ? ", " : "", table.bytes[i], table.rate[i]);
      y += "]\n";
    }
  }
  return y;
}

}  // namespace

std::string measured_tables_yaml(const MeasuredTables& t, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  std::string y = pad + "measured:\n";
  if (t.cores > 0) y += fmt::format("{}  cores: {}\n", pad, t.cores);
  if (t.reuse_distance >= 0)
    y += fmt::format(
        "{}  reuse_distance: {}   # bytes: the tables below, outside "
        "at_reuse_distance\n",
        pad, t.reuse_distance);
  y += compute_tables_yaml(t, pad + "  ");
  if (!t.at_reuse_distance.empty()) {
    y += pad + "  at_reuse_distance:\n";
    for (const auto& [d, c] : t.at_reuse_distance)
      y += fmt::format("{}    {}:\n", pad, d) + compute_tables_yaml(c, pad + "      ");
  }
  if (!t.oversubscribed.empty()) {
    const SyncTable& o = t.oversubscribed;
    y += fmt::format("{}  oversubscribed:\n{}    ranks: {}\n{}    sync: [", pad, pad, o.ranks, pad);
    for (std::size_t i = 0; i < o.grain.size(); ++i)
      y += fmt::format("{}[{:.6g}, {:.6g}]", i ? ", " : "", o.grain[i], o.extra[i]);
    y += "]\n";
  }
  if (!t.collectives.empty()) {
    y += pad + "  collectives:   # rows [ranks, bytes, seconds per call]\n";
    for (const auto& [name, by_ranks] : t.collectives) {
      y += fmt::format("{}    {}: [", pad, name);
      bool first = true;
      for (const auto& [ranks, table] : by_ranks)
        for (std::size_t i = 0; i < table.bytes.size(); ++i, first = false)
          y += fmt::format("{}[{}, {}, {:.9g}]", first ? "" : ", ", ranks, table.bytes[i],
                           table.seconds[i]);
      y += "]\n";
    }
  }
  return y;
}

}  // namespace spora::sim
