// LRU stack distances of a step's reads, and the dataflow that names its tensors (reuse.h).
#include "sim/reuse.h"

#include <algorithm>
#include <map>
#include <string>

namespace spora::sim {

std::vector<std::vector<std::array<double, 2>>> reuse_distances(
    const std::vector<const StepOp*>& ops) {
  std::vector<std::vector<std::array<double, 2>>> out(ops.size());
  // The stack: ids from the least to the most recently used, with their bytes.
  std::vector<TensorRef> stack;
  auto touch = [&](const TensorRef& t) {
    const auto it =
        std::find_if(stack.begin(), stack.end(), [&](const TensorRef& s) { return s.id == t.id; });
    if (it != stack.end()) stack.erase(it);
    stack.push_back(t);
  };
  auto distance = [&](int id) {
    double d = 0;
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      if (it->id == id) return d;
      d += it->bytes;
    }
    return kNeverUsed;
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const StepOp& op = *ops[i];
      if (pass == 1)
        for (const TensorRef& r : op.reads)
          if (r.id >= 0 && r.bytes > 0) out[i].push_back({distance(r.id), r.bytes});
      for (const TensorRef& r : op.reads)
        if (r.id >= 0) touch(r);
      for (const TensorRef& w : op.writes)
        if (w.id >= 0) touch(w);
      // Beyond 4 GiB of more recent data every distance is far; forget the oldest half.
      if (stack.size() > 65536) stack.erase(stack.begin(), stack.begin() + 32768);
    }
  }
  return out;
}

std::vector<double> op_seconds(const CostModel& model, const std::vector<const StepOp*>& ops) {
  const auto reads = reuse_distances(ops);
  std::vector<double> out;
  for (std::size_t i = 0; i < ops.size(); ++i)
    out.push_back(model.time(ops[i]->cost, ops[i]->dtype, reads[i]).seconds);
  return out;
}

TensorRef Dataflow::fresh(const sem::TypeP& t) {
  return {next_++, t && t->is_tensor() ? sem::type_bytes(t) : 0.0};
}

const std::vector<TensorRef>& Dataflow::refs(const ir::Node* n) const {
  static const std::vector<TensorRef> none;
  const auto it = refs_.find(n);
  return it == refs_.end() ? none : it->second;
}

void Dataflow::apply(const ir::Node& n, StepOp& op) {
  if (n.is_prim("make_tuple")) {
    std::vector<TensorRef> all;
    for (const ir::Node* i : n.inputs) {
      const auto& r = refs(i);
      all.insert(all.end(), r.begin(), r.end());
    }
    bind(&n, std::move(all));
    return;
  }
  if (n.is_prim("tuple_get") && !n.inputs.empty()) {
    const auto& r = refs(n.inputs[0]);
    const int64_t k = n.attrs.has("index") ? n.attrs.get_int("index") : -1;
    const sem::TypeP& whole = n.inputs[0]->type;
    // One ref per element when the tuple holds tensors only; else not known.
    if (whole && whole->kind == sem::Type::Kind::Tuple && r.size() == whole->elems.size() &&
        k >= 0 && static_cast<std::size_t>(k) < r.size())
      bind(&n, {r[static_cast<std::size_t>(k)]});
    else
      bind(&n, {});
    return;
  }
  for (const ir::Node* i : n.inputs) {
    const auto& r = refs(i);
    op.reads.insert(op.reads.end(), r.begin(), r.end());
  }
  if (op.cost.op_class == "view" && !n.inputs.empty()) {
    bind(&n, refs(n.inputs[0]));
    return;
  }
  if (n.type && n.type->kind == sem::Type::Kind::Tuple)
    for (const sem::TypeP& e : n.type->elems) op.writes.push_back(fresh(e));
  else
    op.writes.push_back(fresh(n.type));
  bind(&n, op.writes);
}

void connect_update(std::vector<StepOp>& update, TensorRef param, TensorRef gradient,
                    Dataflow& flow) {
  // The ops as update_ops lists them: each reads the tensors named by the letters of its
  // pattern and writes a new temporary, or the parameter or a state tensor in place.
  // p: the parameter, g: its gradient, m and v: the state, 0-9: the temporaries by index.
  // A fused update (one op) reads them all and writes the parameter and the state in place.
  const char* const sgd[] = {"g>0", "p0>p"};
  const char* const momentum[] = {"m>0", "0g>m", "m>1", "p1>p"};
  const char* const adam[] = {"m>0",  "g>1", "01>m", "v>2",  "gg>3", "3>4",
                              "24>v", "v>5", "5>6",  "m6>7", "7>8",  "p8>p"};
  const char* const fused_sgd[] = {"pg>p"};
  const char* const fused_momentum[] = {"pgm>pm"};
  const char* const fused_adam[] = {"pgmv>pmv"};
  const std::size_t n = update.size();
  const char* const* pattern = nullptr;
  if (n == 1) {
    const std::string_view name = update[0].label;
    pattern = name == "fused_sgd"        ? fused_sgd
              : name == "fused_momentum" ? fused_momentum
              : name == "fused_adam"     ? fused_adam
                                         : nullptr;
  } else {
    pattern = n == 2 ? sgd : n == 4 ? momentum : n == 12 ? adam : nullptr;
  }
  if (!pattern) return;
  const sem::TypeP& t = update[0].output;
  std::map<char, TensorRef> named{{'p', param}, {'g', gradient}};
  for (const char s : {'m', 'v'}) named[s] = flow.fresh(t);
  for (std::size_t i = 0; i < n; ++i) {
    const std::string p = pattern[i];
    const std::size_t arrow = p.find('>');
    StepOp& op = update[i];
    for (std::size_t c = 0; c < arrow; ++c)
      if (named[p[c]].id >= 0) op.reads.push_back(named[p[c]]);
    for (std::size_t c = arrow + 1; c < p.size(); ++c) {
      const char out = p[c];
      if (out >= '0' && out <= '9') named[out] = flow.fresh(t);
      if (named[out].id >= 0) op.writes.push_back(named[out]);
    }
  }
}

}  // namespace spora::sim
