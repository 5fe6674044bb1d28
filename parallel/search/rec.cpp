#include "parallel/search/rec.h"

#include <fmt/format.h>

#include <stdexcept>

namespace spora::parallel::search {

namespace {

void check(const RecGraph& g, const RecOptions& o) {
  if (o.devices < 1 || (o.devices & (o.devices - 1)) != 0)
    throw std::invalid_argument(
        fmt::format("recursive programming needs a power-of-two device count, got {}", o.devices));
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const RecOp& op = g.ops[i];
    const int nd = static_cast<int>(op.dims.size());
    auto bad_dim = [&](int d) { return d < 0 || d >= nd; };
    if (op.reduced.size() != op.dims.size())
      throw std::invalid_argument(fmt::format("rec op {} '{}' has {} dims but {} reduced flags", i,
                                              op.name, nd, op.reduced.size()));
    for (int d : op.output)
      if (bad_dim(d))
        throw std::invalid_argument(
            fmt::format("rec op {} '{}' outputs dim {} of {}", i, op.name, d, nd));
    for (const RecOp::Input& in : op.inputs) {
      if (in.producer < 0 || in.producer >= static_cast<int>(i))
        throw std::invalid_argument(fmt::format(
            "rec op {} '{}' reads op {}: producers must come first", i, op.name, in.producer));
      if (in.dim_map.size() != g.ops[in.producer].output.size())
        throw std::invalid_argument(fmt::format(
            "rec op {} '{}' maps {} dims of '{}', whose output has {}", i, op.name,
            in.dim_map.size(), g.ops[in.producer].name, g.ops[in.producer].output.size()));
      for (int d : in.dim_map)
        if (d != -1 && bad_dim(d))
          throw std::invalid_argument(
              fmt::format("rec op {} '{}' maps an input to dim {} of {}", i, op.name, d, nd));
    }
    for (const RecOp::Param& p : op.params)
      for (int d : p.dims)
        if (bad_dim(d))
          throw std::invalid_argument(fmt::format(
              "rec op {} '{}' parameter '{}' spans dim {} of {}", i, op.name, p.name, d, nd));
  }
}

struct Rec {
  const RecGraph& g;
  const RecOptions& o;
  std::vector<std::vector<int64_t>> cuts;
  std::vector<bool> decided;                                // at the current level
  std::vector<std::vector<std::pair<int, int>>> consumers;  // op -> (consumer, input index)

  Rec(const RecGraph& graph, const RecOptions& opt) : g(graph), o(opt) {
    for (const RecOp& op : g.ops) cuts.emplace_back(op.dims.size(), 1);
    consumers.resize(g.ops.size());
    for (size_t c = 0; c < g.ops.size(); ++c)
      for (size_t k = 0; k < g.ops[c].inputs.size(); ++k)
        consumers[g.ops[c].inputs[k].producer].emplace_back(static_cast<int>(c),
                                                            static_cast<int>(k));
  }

  double bytes(const RecOp& op, const std::vector<int>& dims, const std::vector<int64_t>& c) const {
    double b = op.element_bytes;
    for (int d : dims) b *= static_cast<double>(op.dims[d]) / static_cast<double>(c[d]);
    return b;
  }
  double allreduce(double b) const { return o.latency + 2 * b / o.bandwidth; }
  double move(double b) const { return o.latency + b / o.bandwidth; }

  // Does the producer's output, cut as pc, arrive as the consumer (cut cc) wants it?
  bool matches(const RecOp& cons, const RecOp::Input& in, const std::vector<int64_t>& pc,
               const std::vector<int64_t>& cc) const {
    const RecOp& prod = g.ops[in.producer];
    for (size_t j = 0; j < in.dim_map.size(); ++j) {
      const int64_t want = in.dim_map[j] < 0 ? 1 : cc[in.dim_map[j]];
      if (pc[prod.output[j]] != want) return false;
    }
    (void)cons;
    return true;
  }

  // The cost of op i cutting dimension d once more, with every other op as it stands.
  double cost_of(int i, int d) const {
    const RecOp& op = g.ops[i];
    std::vector<int64_t> c = cuts[i];
    c[d] *= 2;
    double cost = 0;
    if (op.reduced[d]) cost += allreduce(bytes(op, op.output, c));
    for (const RecOp::Param& p : op.params) {
      bool spans = false;
      for (int pd : p.dims) spans = spans || pd == d;
      if (!spans) cost += allreduce(bytes(op, p.dims, c));
    }
    for (const RecOp::Input& in : op.inputs) {
      const RecOp& prod = g.ops[in.producer];
      if (!matches(op, in, cuts[in.producer], c))
        cost += move(bytes(prod, prod.output, cuts[in.producer]));
    }
    for (const auto& [ci, k] : consumers[i]) {
      if (!decided[ci]) continue;  // as rec_core: only operators already decided at this level
      const RecOp& cons = g.ops[ci];
      if (!matches(cons, cons.inputs[k], c, cuts[ci])) cost += move(bytes(op, op.output, c));
    }
    return cost;
  }

  RecResult run() {
    RecResult r;
    int levels = 0;
    for (int64_t d = o.devices; d > 1; d /= 2) ++levels;
    for (int level = 0; level < levels; ++level) {
      decided.assign(g.ops.size(), false);
      for (size_t i = 0; i < g.ops.size(); ++i) {
        const RecOp& op = g.ops[i];
        int best = -1;
        double best_cost = 0;
        for (size_t d = 0; d < op.dims.size(); ++d) {
          const int64_t local = op.dims[d] / cuts[i][d];
          if (local < 2 || local % 2 != 0) continue;
          const double c = cost_of(static_cast<int>(i), static_cast<int>(d));
          if (best < 0 || c < best_cost) best = static_cast<int>(d), best_cost = c;
        }
        decided[i] = true;
        if (best < 0) continue;  // nothing left to cut: replicated over this factor
        cuts[i][best] *= 2;
        r.cost += best_cost;
      }
    }
    for (size_t i = 0; i < g.ops.size(); ++i) {
      const RecOp& op = g.ops[i];
      double parts = 1;
      for (int64_t c : cuts[i]) parts *= static_cast<double>(c);
      r.cost += op.flops / parts / o.peak_flops;
      r.memory += bytes(op, op.output, cuts[i]);
      for (const RecOp::Param& p : op.params) {
        r.memory += o.param_copies * bytes(op, p.dims, cuts[i]);
        std::string t;
        for (int pd : p.dims) t += fmt::format("{}{}", t.empty() ? "" : ", ", cuts[i][pd]);
        r.params_layout.push_back(fmt::format("{} ({})", p.name, t));
      }
    }
    r.feasible = o.memory_limit <= 0 || r.memory <= o.memory_limit;
    r.cuts = cuts;
    return r;
  }
};

}  // namespace

RecResult search_rec(const RecGraph& g, const RecOptions& o) {
  check(g, o);
  return Rec(g, o).run();
}

RecGraph transformer_rec_graph(int layers, int64_t b, int64_t s, int64_t h) {
  RecGraph g;
  auto add = [&](RecOp op) {
    g.ops.push_back(std::move(op));
    return static_cast<int>(g.ops.size()) - 1;
  };
  auto make = [](std::string name, std::vector<int64_t> dims, std::vector<bool> reduced) {
    RecOp op;
    op.name = std::move(name);
    op.dims = std::move(dims);
    op.reduced = std::move(reduced);
    op.output = {0, 1, 2};
    return op;
  };
  auto ew = [&](std::string name, int64_t width, std::vector<int> from, bool norm) {
    RecOp op = make(std::move(name), {b, s, width}, {false, false, false});
    for (int f : from) op.inputs.push_back({f, {0, 1, 2}});
    if (norm) op.params.push_back({op.name + ".gamma", {2}});
    op.flops = 8.0 * static_cast<double>(b * s * width);
    return add(std::move(op));
  };
  auto mm = [&](std::string name, int64_t n, int64_t k, int from) {
    RecOp op = make(std::move(name), {b, s, n, k}, {false, false, false, true});
    op.inputs.push_back({from, {0, 1, 3}});
    op.params.push_back({op.name + ".w", {3, 2}});
    op.flops = 2.0 * static_cast<double>(b * s) * static_cast<double>(n * k);
    return add(std::move(op));
  };
  int x = ew("embed", h, {}, false);
  for (int l = 0; l < layers; ++l) {
    const std::string p = fmt::format("layer{}.", l);
    const int ln1 = ew(p + "ln1", h, {x}, true);
    const int qkv = mm(p + "qkv", 3 * h, h, ln1);
    RecOp attn = make(p + "attention", {b, s, 3 * h}, {false, false, false});
    attn.inputs.push_back({qkv, {0, 1, 2}});
    attn.flops = 4.0 * static_cast<double>(b * s) * static_cast<double>(s * h);
    const int at = add(std::move(attn));
    const int proj = mm(p + "proj", h, 3 * h, at);  // k spans the attention's 3h dim
    const int add1 = ew(p + "add1", h, {proj, x}, false);
    const int ln2 = ew(p + "ln2", h, {add1}, true);
    const int fc1 = mm(p + "fc1", 4 * h, h, ln2);
    const int gelu = ew(p + "gelu", 4 * h, {fc1}, false);
    const int fc2 = mm(p + "fc2", h, 4 * h, gelu);
    x = ew(p + "add2", h, {fc2, add1}, false);
  }
  return g;
}

}  // namespace spora::parallel::search
