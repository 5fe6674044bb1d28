// Meshes, layouts, their text forms, the alpha-beta cost of redistribution steps and the
// cheapest redistribution plan (a shortest path over layouts).
#include "parallel/layout/layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <set>

#include "lang/diagnostics.h"

namespace spora::parallel {

using lang::InternalError;
using lang::UserError;

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_list(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  if (trim(s).empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t pos = s.find(sep, start);
    out.push_back(
        trim(s.substr(start, pos == std::string_view::npos ? s.size() - start : pos - start)));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Mesh

int64_t Mesh::size() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

int Mesh::rank_count() const { return static_cast<int>(size()); }

std::string Mesh::axis_name(int axis) const {
  if (axis >= 0 && static_cast<size_t>(axis) < axis_names.size() && !axis_names[axis].empty())
    return axis_names[static_cast<size_t>(axis)];
  return fmt::format("m{}", axis);
}

int Mesh::axis_index(std::string_view name) const {
  for (int a = 0; a < ndim(); ++a)
    if (axis_name(a) == name) return a;
  // "m<i>" always names axis i.
  if (name.size() > 1 && name[0] == 'm') {
    if (auto i = parse_int(name.substr(1)); i && *i < ndim()) return static_cast<int>(*i);
  }
  return -1;
}

std::vector<int64_t> Mesh::coords(int64_t rank) const {
  if (rank < 0 || rank >= size())
    throw InternalError(fmt::format("rank {} is outside the mesh {}", rank, to_string()));
  std::vector<int64_t> c(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    c[i] = rank % shape[i];
    rank /= shape[i];
  }
  return c;
}

int64_t Mesh::rank_of(const std::vector<int64_t>& c) const {
  if (c.size() != shape.size())
    throw InternalError(
        fmt::format("{} coordinates for the {}-axis mesh {}", c.size(), shape.size(), to_string()));
  int64_t r = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (c[i] < 0 || c[i] >= shape[i])
      throw InternalError(
          fmt::format("coordinate {} of axis {} is outside the mesh {}", c[i], i, to_string()));
    r = r * shape[i] + c[i];
  }
  return r;
}

std::vector<int64_t> Mesh::group(int64_t rank, const std::vector<int>& axes) const {
  std::vector<int64_t> out{rank};
  for (int a : axes) {
    if (a < 0 || a >= ndim())
      throw InternalError(fmt::format("mesh axis {} is outside the mesh {}", a, to_string()));
    std::vector<int64_t> next;
    for (int64_t r : out) {
      std::vector<int64_t> c = coords(r);
      for (int64_t i = 0; i < shape[static_cast<size_t>(a)]; ++i) {
        c[static_cast<size_t>(a)] = i;
        next.push_back(rank_of(c));
      }
    }
    out = std::move(next);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Mesh::validate() const {
  if (shape.empty()) throw UserError("a device mesh needs at least one axis");
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] < 1)
      throw UserError(
          fmt::format("mesh axis {} has {} devices; every axis needs at least 1", i, shape[i]));
  if (!axis_names.empty() && axis_names.size() != shape.size())
    throw UserError(fmt::format("the mesh {} has {} axes but {} axis names", to_string(),
                                shape.size(), axis_names.size()));
  std::set<std::string> seen;
  for (int a = 0; a < ndim(); ++a)
    if (!seen.insert(axis_name(a)).second)
      throw UserError(fmt::format("mesh axis name '{}' is used twice", axis_name(a)));
}

std::string Mesh::to_string() const {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "()" : s;
}

Mesh Mesh::parse(std::string_view text) {
  Mesh m;
  const std::string_view t = trim(text);
  const bool named = t.find('=') != std::string_view::npos;
  for (std::string_view part : split_list(t, named ? ',' : 'x')) {
    std::string_view num = part;
    if (named) {
      const size_t eq = part.find('=');
      if (eq == std::string_view::npos)
        throw UserError(
            fmt::format("cannot read the mesh '{}': expected name=size in '{}'", text, part));
      m.axis_names.emplace_back(trim(part.substr(0, eq)));
      num = part.substr(eq + 1);
    }
    auto v = parse_int(num);
    if (!v)
      throw UserError(
          fmt::format("cannot read the mesh '{}': '{}' is not a device count", text, num));
    m.shape.push_back(*v);
  }
  m.validate();
  return m;
}

// ---------------------------------------------------------------------------------------------
// Layout

Layout Layout::replicated(int rank) {
  return Layout{std::vector<int>(static_cast<size_t>(rank), -1), {}};
}

Layout Layout::split(int rank, int dim, int axis) {
  Layout l = replicated(rank);
  l.tensor_map.at(static_cast<size_t>(dim)) = axis;
  return l;
}

bool Layout::is_replicated() const {
  return partial.empty() &&
         std::all_of(tensor_map.begin(), tensor_map.end(), [](int a) { return a < 0; });
}

bool Layout::has_partial(int axis) const {
  return std::find(partial.begin(), partial.end(), axis) != partial.end();
}

int Layout::dim_of_axis(int axis) const {
  for (size_t d = 0; d < tensor_map.size(); ++d)
    if (tensor_map[d] == axis) return static_cast<int>(d);
  return -1;
}

int64_t Layout::pieces(int dim, const Mesh& m) const {
  const int a = tensor_map.at(static_cast<size_t>(dim));
  return a < 0 ? 1 : m.axis_size(a);
}

void Layout::validate(const Mesh& m) const {
  std::vector<int> used(static_cast<size_t>(m.ndim()), 0);
  for (size_t d = 0; d < tensor_map.size(); ++d) {
    const int a = tensor_map[d];
    if (a < -1 || a >= m.ndim())
      throw UserError(
          fmt::format("layout {} splits dimension {} over mesh axis {}, but the mesh "
                      "{} has {} axes",
                      to_string(), d, a, m.to_string(), m.ndim()));
    if (a >= 0 && used[static_cast<size_t>(a)]++)
      throw UserError(fmt::format("layout {} splits two dimensions over mesh axis {}", to_string(),
                                  m.axis_name(a)));
  }
  for (size_t i = 0; i < partial.size(); ++i) {
    const int a = partial[i];
    if (a < 0 || a >= m.ndim())
      throw UserError(
          fmt::format("layout {} is partial over mesh axis {}, but the mesh {} has {} "
                      "axes",
                      to_string(), a, m.to_string(), m.ndim()));
    if (i > 0 && partial[i - 1] >= a)
      throw UserError(
          fmt::format("layout {}: the partial axes must be sorted and unique", to_string()));
    if (used[static_cast<size_t>(a)])
      throw UserError(fmt::format("layout {} both splits and is partial over mesh axis {}",
                                  to_string(), m.axis_name(a)));
  }
}

void Layout::validate(const Mesh& m, const std::vector<int64_t>& global) const {
  validate(m);
  (void)local_shape(global, m);
}

std::vector<int64_t> Layout::local_shape(const std::vector<int64_t>& global, const Mesh& m) const {
  if (global.size() != tensor_map.size())
    throw UserError(fmt::format("layout {} has {} dimensions but the tensor has {}", to_string(),
                                tensor_map.size(), global.size()));
  std::vector<int64_t> local = global;
  for (size_t d = 0; d < global.size(); ++d) {
    const int a = tensor_map[d];
    if (a < 0) continue;
    if (a >= m.ndim())
      throw UserError(fmt::format("layout {} uses mesh axis {}, but the mesh {} has {} axes",
                                  to_string(), a, m.to_string(), m.ndim()));
    const int64_t p = m.axis_size(a);
    if (global[d] < 0 || global[d] % p != 0)
      throw UserError(
          fmt::format("cannot split dimension {} of size {} over mesh axis {} of {} "
                      "devices",
                      d, global[d], a, p));
    local[d] = global[d] / p;
  }
  return local;
}

std::vector<int64_t> Layout::shard_offset(const std::vector<int64_t>& global, const Mesh& m,
                                          int64_t rank) const {
  const std::vector<int64_t> local = local_shape(global, m);
  const std::vector<int64_t> c = m.coords(rank);
  std::vector<int64_t> off(global.size(), 0);
  for (size_t d = 0; d < global.size(); ++d)
    if (tensor_map[d] >= 0) off[d] = c[static_cast<size_t>(tensor_map[d])] * local[d];
  return off;
}

double Layout::local_fraction(const Mesh& m) const {
  double f = 1;
  for (int a : tensor_map)
    if (a >= 0) f /= static_cast<double>(m.axis_size(a));
  return f;
}

namespace {

std::string layout_text(const Layout& l, const Mesh* m) {
  auto name = [&](int a) { return m ? m->axis_name(a) : fmt::format("m{}", a); };
  std::string s = "[";
  for (size_t d = 0; d < l.tensor_map.size(); ++d)
    s += (d ? ", " : "") + (l.tensor_map[d] < 0 ? std::string("-") : name(l.tensor_map[d]));
  s += "]";
  if (!l.partial.empty()) {
    s += " partial(";
    for (size_t i = 0; i < l.partial.size(); ++i) s += (i ? ", " : "") + name(l.partial[i]);
    s += ")";
  }
  return s;
}

}  // namespace

std::string Layout::to_string() const { return layout_text(*this, nullptr); }
std::string Layout::to_string(const Mesh& m) const { return layout_text(*this, &m); }

std::string Layout::partition_string(const Mesh& m) const {
  std::string s = "(";
  for (size_t d = 0; d < tensor_map.size(); ++d)
    s += (d ? ", " : "") + std::to_string(tensor_map[d] < 0 ? 1 : m.axis_size(tensor_map[d]));
  s += tensor_map.size() == 1 ? ",)" : ")";
  if (!partial.empty()) {
    s += " partial(";
    for (size_t i = 0; i < partial.size(); ++i) s += (i ? ", " : "") + m.axis_name(partial[i]);
    s += ")";
  }
  return s;
}

Layout Layout::parse(std::string_view text, const Mesh& m, int rank) {
  auto fail = [&](const std::string& why) -> UserError {
    return UserError(fmt::format("cannot read the layout '{}': {}", text, why));
  };
  std::string_view t = trim(text);
  Layout l;
  // The optional "partial(...)" suffix.
  const size_t pp = t.find("partial");
  std::string_view head = trim(pp == std::string_view::npos ? t : t.substr(0, pp));
  if (pp != std::string_view::npos) {
    std::string_view rest = trim(t.substr(pp + 7));
    if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')')
      throw fail("expected partial(<mesh axes>)");
    for (std::string_view name : split_list(rest.substr(1, rest.size() - 2), ',')) {
      const int a = m.axis_index(name);
      if (a < 0) throw fail(fmt::format("'{}' is not an axis of the mesh {}", name, m.to_string()));
      l.partial.push_back(a);
    }
    std::sort(l.partial.begin(), l.partial.end());
    if (std::adjacent_find(l.partial.begin(), l.partial.end()) != l.partial.end())
      throw fail("a mesh axis is listed twice in partial(...)");
  }
  if (head.size() < 2) throw fail("expected [axis, ...] or (pieces, ...)");
  const char open = head.front(), close = head.back();
  std::string_view body = head.substr(1, head.size() - 2);
  if (open == '[' && close == ']') {
    for (std::string_view e : split_list(body, ',')) {
      if (e == "-" || e == "-1") {
        l.tensor_map.push_back(-1);
        continue;
      }
      int a = m.axis_index(e);
      if (a < 0) {
        if (auto i = parse_int(e); i && *i < m.ndim()) a = static_cast<int>(*i);
      }
      if (a < 0) throw fail(fmt::format("'{}' is not an axis of the mesh {}", e, m.to_string()));
      l.tensor_map.push_back(a);
    }
  } else if (open == '(' && close == ')') {
    std::vector<bool> used(static_cast<size_t>(m.ndim()), false);
    for (int a : l.partial) used[static_cast<size_t>(a)] = true;
    for (std::string_view e : split_list(body, ',')) {
      if (e.empty()) continue;  // "(2,)"
      auto n = parse_int(e);
      if (!n || *n < 1) throw fail(fmt::format("'{}' is not a number of pieces", e));
      if (*n == 1) {
        l.tensor_map.push_back(-1);
        continue;
      }
      int found = -1;
      for (int a = 0; a < m.ndim() && found < 0; ++a)
        if (!used[static_cast<size_t>(a)] && m.axis_size(a) == *n) found = a;
      if (found < 0)
        throw fail(
            fmt::format("no unused axis of the mesh {} has {} devices (a dimension is "
                        "split over one mesh axis)",
                        m.to_string(), *n));
      used[static_cast<size_t>(found)] = true;
      l.tensor_map.push_back(found);
    }
  } else {
    throw fail("expected [axis, ...] or (pieces, ...)");
  }
  if (l.rank() != rank)
    throw fail(fmt::format("it has {} dimensions but the tensor has {}", l.rank(), rank));
  l.validate(m);
  return l;
}

// ---------------------------------------------------------------------------------------------
// Redistribution steps and their cost

const char* kind_name(RedistStep::Kind k) {
  switch (k) {
    case RedistStep::Kind::AllGather:
      return "all_gather";
    case RedistStep::Kind::Slice:
      return "slice";
    case RedistStep::Kind::AllReduce:
      return "all_reduce";
    case RedistStep::Kind::ReduceScatter:
      return "reduce_scatter";
    case RedistStep::Kind::AllToAll:
      return "all_to_all";
  }
  return "?";
}

std::string RedistStep::to_string() const {
  switch (kind) {
    case Kind::AllReduce:
      return fmt::format("all_reduce(m{})", axis);
    case Kind::AllToAll:
      return fmt::format("all_to_all(dim {} -> dim {}, m{})", dim, dim2, axis);
    default:
      return fmt::format("{}(dim {}, m{})", kind_name(kind), dim, axis);
  }
}

const AxisLink& CommModel::link(int axis) const {
  static const AxisLink kDefault{};
  if (axis >= 0 && static_cast<size_t>(axis) < axes.size()) return axes[static_cast<size_t>(axis)];
  return kDefault;
}

double CommModel::time(const RedistStep& s, int64_t bytes_before, const Mesh& m) const {
  if (s.kind == RedistStep::Kind::Slice) return 0;
  const double p = static_cast<double>(m.axis_size(s.axis));
  if (p <= 1) return 0;
  const AxisLink& l = link(s.axis);
  const double n = static_cast<double>(bytes_before), B = l.bandwidth_Bps;
  switch (s.kind) {
    case RedistStep::Kind::AllGather:
      return l.call_s + (p - 1) * (l.alpha_s + n / B);
    case RedistStep::Kind::ReduceScatter:
    case RedistStep::Kind::AllToAll:
      return l.call_s + (p - 1) * (l.alpha_s + n / (p * B));
    case RedistStep::Kind::AllReduce:
      return l.call_s + 2 * (p - 1) * (l.alpha_s + n / (p * B));
    case RedistStep::Kind::Slice:
      break;
  }
  return 0;
}

int64_t CommModel::bytes_sent(const RedistStep& s, int64_t bytes_before, const Mesh& m) {
  if (s.kind == RedistStep::Kind::Slice) return 0;
  const int64_t p = m.axis_size(s.axis);
  switch (s.kind) {
    case RedistStep::Kind::AllGather:
      return (p - 1) * bytes_before;
    case RedistStep::Kind::ReduceScatter:
    case RedistStep::Kind::AllToAll:
      return (p - 1) * (bytes_before / p);
    case RedistStep::Kind::AllReduce:
      return 2 * (p - 1) * (bytes_before / p);
    case RedistStep::Kind::Slice:
      break;
  }
  return 0;
}

std::string RedistPlan::to_string() const {
  if (steps.empty()) return "identity";
  std::string s;
  for (size_t i = 0; i < steps.size(); ++i) s += (i ? "; " : "") + steps[i].to_string();
  return s;
}

Layout apply_step(const Layout& l, const RedistStep& s) {
  Layout r = l;
  auto need = [&](bool ok, const char* what) {
    if (!ok)
      throw InternalError(fmt::format("redistribution step {} does not apply to layout {}: {}",
                                      s.to_string(), l.to_string(), what));
  };
  auto in_range = [&](int d) { return d >= 0 && d < l.rank(); };
  switch (s.kind) {
    case RedistStep::Kind::AllGather:
      need(in_range(s.dim) && l.tensor_map[static_cast<size_t>(s.dim)] == s.axis,
           "dim not split over the axis");
      r.tensor_map[static_cast<size_t>(s.dim)] = -1;
      break;
    case RedistStep::Kind::Slice:
      need(in_range(s.dim) && l.tensor_map[static_cast<size_t>(s.dim)] < 0, "dim already split");
      need(l.dim_of_axis(s.axis) < 0 && !l.has_partial(s.axis), "axis in use");
      r.tensor_map[static_cast<size_t>(s.dim)] = s.axis;
      break;
    case RedistStep::Kind::AllReduce:
      need(l.has_partial(s.axis), "not partial over the axis");
      r.partial.erase(std::find(r.partial.begin(), r.partial.end(), s.axis));
      break;
    case RedistStep::Kind::ReduceScatter:
      need(l.has_partial(s.axis), "not partial over the axis");
      need(in_range(s.dim) && l.tensor_map[static_cast<size_t>(s.dim)] < 0, "dim already split");
      r.partial.erase(std::find(r.partial.begin(), r.partial.end(), s.axis));
      r.tensor_map[static_cast<size_t>(s.dim)] = s.axis;
      break;
    case RedistStep::Kind::AllToAll:
      need(in_range(s.dim) && l.tensor_map[static_cast<size_t>(s.dim)] == s.axis,
           "dim not split over the axis");
      need(in_range(s.dim2) && l.tensor_map[static_cast<size_t>(s.dim2)] < 0, "dim2 already split");
      r.tensor_map[static_cast<size_t>(s.dim)] = -1;
      r.tensor_map[static_cast<size_t>(s.dim2)] = s.axis;
      break;
  }
  return r;
}

// The plan is a shortest path over the layouts of this tensor on this mesh (each mesh axis
// unused, splitting one of the dims, or partial: at most (rank + 2)^axes states, a few hundred
// for the meshes we meet) with the steps as edges weighted by their time. Ties are broken by
// fewer bytes, then fewer steps, so a free Slice is preferred to nothing only when needed.
namespace {

struct PathCost {
  double seconds = 0;
  int64_t bytes = 0;
  size_t steps = 0;
  bool operator<(const PathCost& o) const {
    // Times within a relative 1e-12 are equal, so the tie-breaks decide.
    const double tol = 1e-12 * std::max(std::abs(seconds), std::abs(o.seconds));
    if (std::abs(seconds - o.seconds) > tol) return seconds < o.seconds;
    if (bytes != o.bytes) return bytes < o.bytes;
    return steps < o.steps;
  }
};

using LayoutKey = std::pair<std::vector<int>, std::vector<int>>;  // (tensor_map, partial)
LayoutKey key_of(const Layout& l) { return {l.tensor_map, l.partial}; }

struct ShortestPaths {
  std::map<LayoutKey, PathCost> best;
  std::map<LayoutKey, std::pair<Layout, RedistStep>> prev;
};

// Dijkstra from `from` (valid for `shape`) over the layouts of the tensor. A partial axis in
// `keep` is never reduced (the target keeps it: reducing it cannot be undone); partial axes are
// never created, so every path to a layout partial over some axes keeps those axes throughout,
// and searching with fewer axes kept finds the same cheapest path to it. Stops once `stop` is
// settled (its cost is then final), else settles every reachable layout.
ShortestPaths shortest_paths(const Layout& from, const std::vector<int>& keep, const Layout* stop,
                             const std::vector<int64_t>& shape, int dtype_bytes, const Mesh& m,
                             const CommModel& cm) {
  auto kept = [&](int a) { return std::find(keep.begin(), keep.end(), a) != keep.end(); };
  auto local_bytes = [&](const Layout& l) {
    int64_t n = dtype_bytes;
    for (int64_t s : l.local_shape(shape, m)) n *= s;
    return n;
  };
  auto fits = [&](const Layout& l) {
    for (size_t d = 0; d < shape.size(); ++d)
      if (l.tensor_map[d] >= 0 && shape[d] % m.axis_size(l.tensor_map[d]) != 0) return false;
    return true;
  };
  // Candidate steps out of a layout. Partial axes are never created; a kept partial axis is
  // never reduced.
  auto moves = [&](const Layout& l) {
    std::vector<RedistStep> out;
    const int rank = l.rank();
    for (int a = 0; a < m.ndim(); ++a) {
      const int d = l.dim_of_axis(a);
      if (l.has_partial(a)) {
        if (kept(a)) continue;
        out.push_back({RedistStep::Kind::AllReduce, -1, -1, a, {}});
        for (int e = 0; e < rank; ++e)
          if (l.tensor_map[static_cast<size_t>(e)] < 0)
            out.push_back({RedistStep::Kind::ReduceScatter, e, -1, a, {}});
      } else if (d >= 0) {
        out.push_back({RedistStep::Kind::AllGather, d, -1, a, {}});
        for (int e = 0; e < rank; ++e)
          if (l.tensor_map[static_cast<size_t>(e)] < 0)
            out.push_back({RedistStep::Kind::AllToAll, d, e, a, {}});
      } else {
        for (int e = 0; e < rank; ++e)
          if (l.tensor_map[static_cast<size_t>(e)] < 0)
            out.push_back({RedistStep::Kind::Slice, e, -1, a, {}});
      }
    }
    return out;
  };

  ShortestPaths sp;
  auto cmp = [](const std::pair<PathCost, Layout>& a, const std::pair<PathCost, Layout>& b) {
    return b.first < a.first;
  };
  std::priority_queue<std::pair<PathCost, Layout>, std::vector<std::pair<PathCost, Layout>>,
                      decltype(cmp)>
      queue(cmp);
  sp.best[key_of(from)] = PathCost{};
  queue.push({PathCost{}, from});
  while (!queue.empty()) {
    auto [c, l] = queue.top();
    queue.pop();
    const PathCost& known = sp.best[key_of(l)];
    if (known < c) continue;
    if (stop && l == *stop) break;
    const int64_t bytes = local_bytes(l);
    for (RedistStep s : moves(l)) {
      Layout next = apply_step(l, s);
      if (!fits(next)) continue;
      s.shape_before = l.local_shape(shape, m);
      PathCost nc{c.seconds + cm.time(s, bytes, m), c.bytes + CommModel::bytes_sent(s, bytes, m),
                  c.steps + 1};
      auto it = sp.best.find(key_of(next));
      if (it != sp.best.end() && !(nc < it->second)) continue;
      sp.best[key_of(next)] = nc;
      sp.prev.insert_or_assign(key_of(next), std::make_pair(l, s));
      queue.push({nc, next});
    }
  }
  return sp;
}

}  // namespace

RedistPlan plan_redistribution(const Layout& from, const Layout& to,
                               const std::vector<int64_t>& shape, int dtype_bytes, const Mesh& m,
                               const CommModel& cm) {
  from.validate(m, shape);
  to.validate(m, shape);
  for (int a : to.partial)
    if (!from.has_partial(a))
      throw UserError(
          fmt::format("cannot redistribute {} to {}: the target is partial over mesh "
                      "axis {} and the source is not",
                      from.to_string(m), to.to_string(m), m.axis_name(a)));
  RedistPlan plan;
  if (from == to) return plan;
  const ShortestPaths sp = shortest_paths(from, to.partial, &to, shape, dtype_bytes, m, cm);
  auto it = sp.best.find(key_of(to));
  if (it == sp.best.end())
    throw UserError(fmt::format("cannot redistribute {} to {} for shape [{}] on the mesh {}",
                                from.to_string(m), to.to_string(m), fmt::join(shape, ","),
                                m.to_string()));
  plan.seconds = it->second.seconds;
  plan.bytes_moved = it->second.bytes;
  for (Layout l = to; !(l == from);) {
    const auto& [p, s] = sp.prev.at(key_of(l));
    plan.steps.push_back(s);
    l = p;
  }
  std::reverse(plan.steps.begin(), plan.steps.end());
  return plan;
}

std::vector<std::pair<Layout, double>> redistribution_seconds_from(
    const Layout& from, const std::vector<int64_t>& shape, int dtype_bytes, const Mesh& m,
    const CommModel& cm) {
  from.validate(m, shape);
  const ShortestPaths sp = shortest_paths(from, {}, nullptr, shape, dtype_bytes, m, cm);
  std::vector<std::pair<Layout, double>> out;
  out.reserve(sp.best.size());
  for (const auto& [key, cost] : sp.best) out.push_back({Layout{key.first, key.second}, cost.seconds});
  return out;
}

}  // namespace spora::parallel
