// SpmdRuntime: see spmd_runtime.h (the numbered steps there are referred to below).
#include "backends/distributed/spmd_runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "backends/comm/communicator.h"
#include "backends/distributed/program_pipeline.h"
#include "backends/distributed/stage_runner.h"
#include "backends/runtime/data/dataset.h"
#include "lang/diagnostics.h"
#include "parallel/layout/shard_data.h"
#include "parallel/partition/node_strategy.h"
#include "parallel/partition/pin_fields.h"
#include "parallel/sharding/sharding.h"
#include "semantics/interpreter.h"
#include "semantics/iterable.h"
#include "semantics/registry.h"
#include "semantics/restore.h"
#include "semantics/shape_rules.h"

namespace spora::distributed {

using parallel::Layout;
using parallel::OpStrategy;
using parallel::RedistStep;
using sem::Attrs;
using sem::Tensor;
using sem::TypeP;
using sem::Value;

namespace {

const sem::Primitive& prim(const std::string& name) {
  const sem::Primitive* p = sem::Registry::instance().find(name);
  if (!p) throw lang::InternalError("the distributed runtime needs the primitive " + name);
  return *p;
}

bool is_structural(const std::string& name) {
  return name == "make_tuple" || name == "tuple_get" || name == "record_get";
}
bool is_data_source(const std::string& name) {
  return name == "batches" || name == "fashion_mnist";
}
// Effects whose output one copy of is enough: rank 0 runs them (step 5).
bool is_rank0_effect(const std::string& name) {
  static const std::set<std::string> names = {"print", "report",   "log_epoch", "save_curves",
                                              "save",  "save_idx", "save_npy",  "grad_check"};
  return names.count(name) > 0;
}

}  // namespace

struct SpmdRuntime::Impl {
  SpmdRuntime& rt;
  comm::Communicator& world;
  const parallel::Mesh& mesh;
  parallel::CommModel comm_model;
  std::vector<Layout> layouts{Layout{}};  // id -> layout; id 0 is "whole"
  std::vector<char> zero_ids{0};          // id -> a ZeRO shard (step 6)
  std::vector<int> owner_of{-1};          // id -> the stage owning it (step 9), or -1
  std::map<std::string, uint32_t> ids;    // layout text (+ " zero", " stage k") -> id
  sem::FusedKernelHook fused;             // the codegen hook this one wraps

  struct Choice {
    OpStrategy strategy;
    Attrs attrs;
    double scale = 1;
    bool scale_known = false;
  };
  std::map<std::pair<const ir::Node*, std::vector<uint32_t>>, Choice> choices;
  // Per fusion group and its arguments' placements: how it runs on its shards (local_group).
  struct LocalGroup;
  std::map<std::pair<const ir::Graph*, std::vector<uint32_t>>, std::optional<LocalGroup>>
      local_groups;
  bool in_local_group = false;  // a group's kernel runs on this rank's shards: no hook applies

  // Redistributed values, by source storage and target layout id, while the source lives.
  struct Redistributed {
    std::weak_ptr<sem::Storage> source;
    Value value;
  };
  // Key: source storage, its placement, the target placement, the global type.
  using RedistKey = std::tuple<const sem::Storage*, uint32_t, uint32_t, std::string>;
  std::map<RedistKey, Redistributed> redistributed;

  // Placements (step 1): layout id by buffer and shape, while the buffer lives.
  struct Placed {
    std::weak_ptr<sem::Storage> storage;
    uint32_t id = 0;
  };
  std::map<std::pair<const sem::Storage*, sem::Shape>, Placed> placed;
  size_t placed_since_prune = 0;

  uint32_t placement(const Value& v) const {
    if (!v.is_tensor() || !v.tensor.storage() || placed.empty()) return 0;
    auto it = placed.find({v.tensor.storage().get(), v.tensor.shape()});
    if (it == placed.end() || it->second.storage.lock() != v.tensor.storage()) return 0;
    return it->second.id;
  }
  void set_placement(const Value& v, uint32_t id) {
    if (!v.is_tensor() || !v.tensor.storage()) return;
    const auto key = std::make_pair(v.tensor.storage().get(), v.tensor.shape());
    if (id == 0) {
      placed.erase(key);
      return;
    }
    placed[key] = {v.tensor.storage(), id};
    if (++placed_since_prune > 4096) {
      placed_since_prune = 0;
      for (auto it = placed.begin(); it != placed.end();)
        it = it->second.storage.expired() ? placed.erase(it) : std::next(it);
    }
  }

  // Parameter layouts by record path ("l1.w"), from the plan's names ("net.l1.w").
  std::map<std::string, std::string> param_paths;

  Impl(SpmdRuntime& r, comm::Communicator& w) : rt(r), world(w), mesh(r.plan_.mesh) {
    for (const auto& [name, text] : r.plan_.params) {
      const size_t dot = name.find('.');
      param_paths[dot == std::string::npos ? name : name.substr(dot + 1)] = text;
    }
  }

  uint32_t id_of(const Layout& l, bool zero = false, int owner = -1) {
    if (l.is_replicated() && owner < 0) return 0;
    const std::string key = l.to_string() + (zero ? " zero" : "") +
                            (owner >= 0 ? fmt::format(" stage {}", owner) : std::string());
    auto it = ids.find(key);
    if (it != ids.end()) return it->second;
    layouts.push_back(l);
    zero_ids.push_back(zero ? 1 : 0);
    owner_of.push_back(owner);
    const auto id = static_cast<uint32_t>(layouts.size() - 1);
    ids.emplace(key, id);
    return id;
  }
  Layout layout(const Value& v, const TypeP& global) const {
    if (!v.is_tensor()) return parallel::replicated_layout(global);
    const uint32_t id = placement(v);
    if (id == 0)
      return global && global->is_tensor() ? Layout::replicated(static_cast<int>(global->rank()))
                                           : Layout::replicated(static_cast<int>(v.tensor.rank()));
    return layouts.at(id);
  }

  // True when v is, or holds, a tensor that is not whole.
  bool holds_shards(const Value& v) const {
    if (v.is_tensor()) return placement(v) != 0;
    if ((v.kind == Value::Kind::Tuple || v.kind == Value::Kind::Record) && v.elems)
      for (const Value& e : *v.elems)
        if (holds_shards(e)) return true;
    return false;
  }

  // --- ZeRO (step 6) ---

  bool is_zero(const Value& v) const {
    const uint32_t id = placement(v);
    return id != 0 && zero_ids.at(id);
  }
  // `base` split once more over the ZeRO axis: the first dimension it leaves whole that the axis
  // divides. None when the layout is partial, already uses the axis, or no dimension fits.
  std::optional<Layout> zero_layout(const Layout& base, const sem::Shape& shape) const {
    const int axis = rt.plan_.zero_axis;
    if (base.is_partial() || static_cast<size_t>(base.rank()) != shape.size()) return {};
    for (int a : base.tensor_map)
      if (a == axis) return {};
    const int64_t p = mesh.axis_size(axis);
    for (int d = 0; d < base.rank(); ++d)
      if (base.tensor_map[static_cast<size_t>(d)] < 0 && shape[static_cast<size_t>(d)] % p == 0) {
        Layout z = base;
        z.tensor_map[static_cast<size_t>(d)] = axis;
        return z;
      }
    return {};
  }
  // A ZeRO shard's layout without the ZeRO split: what a primitive that needs it whole sees.
  Layout gathered(Layout z) const {
    for (int& a : z.tensor_map)
      if (a == rt.plan_.zero_axis) a = -1;
    return z;
  }
  // Whether n is elementwise and every input `marked` picks (ZeRO shards, owned values) has
  // one placement, `id`, and the output's shape: the update an optimizer runs where its state
  // lives.
  bool elementwise_over_one_placement(const ir::Node& n, const std::vector<Value>& in,
                                      bool (Impl::*marked)(const Value&) const, uint32_t& id) const {
    id = 0;
    bool local = n.prim->family == "elementwise" && n.type && n.type->is_tensor();
    for (size_t i = 0; i < in.size() && local; ++i) {
      if (!(this->*marked)(in[i])) continue;
      const uint32_t z = placement(in[i]);
      local = (id == 0 || id == z) && n.inputs[i]->type && n.inputs[i]->type->shape == n.type->shape;
      id = z;
    }
    return local;
  }
  // Before primitive n runs: unless it is elementwise over ZeRO shards of one layout and the
  // output's shape (the optimizer's update), its ZeRO inputs are gathered over the axis (kept
  // for the life of the shard below stage 3). Returns the shards' layout id when they stay.
  uint32_t gather_zero_inputs(const ir::Node& n, std::vector<Value>& in) {
    uint32_t id = 0;
    if (elementwise_over_one_placement(n, in, &Impl::is_zero, id)) return id;
    for (size_t i = 0; i < in.size(); ++i)
      if (is_zero(in[i]))
        in[i] = redistribute(in[i], gathered(layouts.at(placement(in[i]))), n.inputs[i]->type,
                             false, rt.plan_.zero_stage < 3);
    return 0;
  }

  // --- sequence parallelism (step 8) ---

  void sequence_shard_partials(const ir::Node& n, std::vector<Value>& in) {
    const int axis = rt.plan_.sp_axis, dim = rt.plan_.sp_dim;
    const std::string& name = n.prim->name;
    const bool norm = name == "layer_norm" || name == "layer_norm_grad";
    if (n.prim->family != "elementwise" && !norm && name != "dropout") return;
    for (size_t i = 0; i < in.size(); ++i) {
      const TypeP& t = n.inputs[i]->type;
      if (!in[i].is_tensor() || !t || !t->is_tensor() || static_cast<int>(t->rank()) <= dim)
        continue;
      // layer_norm's x and both of layer_norm_grad's inputs are never split along the
      // normalised axes.
      if (norm && (i == 0 || name == "layer_norm_grad") &&
          dim >= static_cast<int>(t->rank()) -
                     static_cast<int>(n.attrs.has("ndim") ? n.attrs.get_int("ndim") : 1))
        continue;
      const Layout l = layout(in[i], t);
      if (!l.has_partial(axis) || l.tensor_map[static_cast<size_t>(dim)] >= 0 ||
          t->shape[static_cast<size_t>(dim)] % mesh.axis_size(axis) != 0)
        continue;
      if (std::find(l.tensor_map.begin(), l.tensor_map.end(), axis) != l.tensor_map.end()) continue;
      Layout to = l;
      to.partial.erase(std::remove(to.partial.begin(), to.partial.end(), axis), to.partial.end());
      to.tensor_map[static_cast<size_t>(dim)] = axis;
      in[i] = redistribute(in[i], to, t);
    }
  }

  // --- redistribution (step 3) ---

  Value run_step(const Value& x, const RedistStep& step) {
    const parallel::CollectiveCall c = parallel::collective_call(step, mesh);
    if (step.kind != RedistStep::Kind::Slice) {
      ++rt.stats_.collectives;
      rt.stats_.collective_bytes += static_cast<int64_t>(x.tensor.nbytes());
      auto& [count, bytes] = rt.stats_.by_collective[c.prim];
      ++count;
      bytes += static_cast<int64_t>(x.tensor.nbytes());
    }
    return sem::kernel_for(prim(c.prim))({x}, c.attrs);
  }

  // x (a tensor of global type `global`) in layout `to` (a ZeRO shard with `zero`). The result
  // is kept for the life of x's buffer unless `keep` is false (ZeRO-3's gathered parameters).
  Value redistribute(const Value& x, const Layout& to, const TypeP& global, bool zero = false,
                     bool keep = true) {
    const Layout from = layout(x, global);
    const uint32_t to_id = id_of(to, zero);
    if (from == to) {
      if (placement(x) != to_id) set_placement(x, to_id);
      return x;
    }
    const std::shared_ptr<sem::Storage>& storage = x.tensor.storage();
    const RedistKey key{storage.get(), placement(x), to_id, global->str()};
    if (!keep) {
      Value cur = x;
      for (const RedistStep& step : parallel::plan_redistribution(
                                        from, to, global->shape,
                                        static_cast<int>(dtype_size(global->dtype)), mesh,
                                        comm_model)
                                        .steps)
        cur = run_step(cur, step);
      set_placement(cur, to_id);
      return cur;
    }
    if (auto hit = redistributed.find(key); hit != redistributed.end()) {
      if (hit->second.source.lock() == storage) return hit->second.value;
      redistributed.erase(hit);
    }
    const parallel::RedistPlan plan = parallel::plan_redistribution(
        from, to, global->shape, static_cast<int>(dtype_size(global->dtype)), mesh, comm_model);
    Value cur = x;
    for (const RedistStep& step : plan.steps) cur = run_step(cur, step);
    set_placement(cur, to_id);
    prune();
    redistributed[key] = {storage, cur};
    return cur;
  }

  // A kernel may write its result into an input it holds alone: what was redistributed from
  // that buffer is stale then.
  void forget_unique(const std::vector<Value>& in) {
    if (redistributed.empty()) return;
    for (const Value& v : in)
      if (v.is_tensor() && v.tensor.unique()) {
        const sem::Storage* s = v.tensor.storage().get();
        auto it = redistributed.lower_bound(RedistKey{s, 0, 0, ""});
        while (it != redistributed.end() && std::get<0>(it->first) == s)
          it = redistributed.erase(it);
      }
  }

  void prune() {
    for (auto it = redistributed.begin(); it != redistributed.end();)
      it = it->second.source.expired() ? redistributed.erase(it) : std::next(it);
  }

  Value whole(const Value& v, const TypeP& global) {
    if (v.is_tensor()) {
      if (placement(v) == 0) return v;
      const TypeP t = global && global->is_tensor() ? global : nullptr;
      if (!t) throw lang::InternalError("the distributed runtime lost the global type of a shard");
      if (is_owned(v)) return fetch(v, t);
      return redistribute(v, Layout::replicated(static_cast<int>(t->rank())), t);
    }
    if ((v.kind == Value::Kind::Tuple || v.kind == Value::Kind::Record) && v.elems &&
        holds_shards(v)) {
      Value out = v;
      out.elems = std::make_shared<std::vector<Value>>(*v.elems);
      const TypeP t = global ? global : v.type();
      for (size_t i = 0; i < out.elems->size(); ++i)
        (*out.elems)[i] = whole((*out.elems)[i], element_type(t, i, (*out.elems)[i]));
      return out;
    }
    return v;
  }

  // The global type of element i of a tuple or record of type t whose element value is e: a
  // shard's global type is its layout's global shape.
  TypeP element_type(const TypeP& t, size_t i, const Value& e) const {
    if (t && i < t->elems.size() && t->elems[i]) return t->elems[i];
    if (!e.is_tensor()) return e.type();
    return global_type(e);
  }
  TypeP global_type(const Value& e) const {
    if (!absent.empty())
      if (auto it = absent.find(e.tensor.storage().get());
          it != absent.end() && it->second.storage.lock() == e.tensor.storage())
        return it->second.type;
    sem::Shape shape = e.tensor.shape();
    if (const uint32_t id = placement(e); id != 0) {
      const Layout& l = layouts.at(id);
      for (int d = 0; d < l.rank(); ++d) shape[static_cast<size_t>(d)] *= l.pieces(d, mesh);
    }
    return sem::Type::tensor(e.tensor.dtype(), shape);
  }

  // --- parameters (step 2) ---

  void place(Value& v, const std::string& path, bool model_field = false) {
    if (v.is_tensor() && placement(v) == 0 && rt.plan_.zero_stage > 0 && model_field &&
        is_float(v.tensor.dtype()) && v.tensor.rank() >= 1) {
      // ZeRO: the field's layout (the plan's, else whole) split over the ZeRO axis.
      const TypeP t = v.tensor.type();
      auto it = param_paths.find(path);
      const Layout base = it == param_paths.end()
                              ? Layout::replicated(static_cast<int>(t->rank()))
                              : Layout::parse(it->second, mesh, static_cast<int>(t->rank()));
      if (const std::optional<Layout> z = zero_layout(base, t->shape)) {
        v = redistribute(v, *z, t, true);
        ++rt.stats_.placed_parameters;
        return;
      }
    }
    if (v.is_tensor()) {
      if (placement(v) != 0) return;
      auto it = param_paths.find(path);
      if (it == param_paths.end()) return;
      const TypeP t = v.tensor.type();
      Layout l;
      try {
        l = Layout::parse(it->second, mesh, static_cast<int>(t->rank()));
        l.validate(mesh, t->shape);
      } catch (const lang::UserError& e) {
        throw lang::UserError(fmt::format("{}: the layout {} of '{}' does not fit {}: {}",
                                          rt.plan_.origin, it->second, path, t->str(), e.what()));
      }
      v = redistribute(v, l, t);
      ++rt.stats_.placed_parameters;
      return;
    }
    if (v.kind != Value::Kind::Record || !v.elems || !v.record_type) return;
    const auto& names = v.record_type->names;
    auto fields = std::make_shared<std::vector<Value>>(*v.elems);
    for (size_t i = 0; i < fields->size() && i < names.size(); ++i)
      place((*fields)[i], path.empty() ? names[i] : path + "." + names[i],
            !v.record_type->name.empty());
    v.elems = std::move(fields);
  }

  // --- the hook (steps 3 to 5) ---

  bool on_primitive(const ir::Node& n, std::vector<Value>& in, Value& result) {
    // A stage program's node (step 9), or a local group's anchor: nothing to place.
    if (in_stage || in_local_group) return false;
    const sem::Primitive& p = *n.prim;
    const std::string& name = p.name;
    if (pipe && name == "shard_hint" && n.attrs.has("owner") && n.type && n.type->is_tensor()) {
      // A parameter's field in a record the program builds (the model, its gradient, the
      // optimizer's state): owned by its stage from the start.
      const Layout l = Layout::parse(n.attrs.get_string("layout"), mesh, static_cast<int>(n.type->rank()));
      result = own(in.at(0), n.type, id_of(l, false, static_cast<int>(n.attrs.get_int("owner"))));
      return true;
    }
    if (is_structural(name)) return false;
    if (pipe && !p.effectful && name != "make_record" && name != "load") {
      bool any = false;
      for (const Value& v : in) any |= is_owned(v);
      if (any && owned_locally(n, in, result)) return true;
    }
    if (name == "make_record") return false;  // a record keeps its fields' shards
    if (name == "load") {
      // `like` gives the type only; the loaded record's fields take the plan's layouts.
      for (size_t i = 0; i < in.size(); ++i) in[i] = whole(in[i], n.inputs[i]->type);
      result = sem::kernel_for(p)(in, n.attrs);
      if (!param_paths.empty() || rt.plan_.zero_stage > 0) place(result, "");
      return true;
    }
    if (is_data_source(name)) {
      Attrs a = n.attrs;
      if (world.rank() != 0 && !rt.plan_.tag_all_ranks) a.set("progress", false);
      result = sem::kernel_for(p)(in, a);
      if (rt.plan_.data_axis >= 0) wrap_iterable(result);
      return true;
    }
    if (p.effectful) {
      // An owned value an effect reads (save, print) is not kept whole after it.
      keep_fetched = false;
      struct Reset {
        bool& flag;
        ~Reset() { flag = true; }
      } reset{keep_fetched};
      for (size_t i = 0; i < in.size(); ++i) in[i] = whole(in[i], n.inputs[i]->type);
      if (is_rank0_effect(name) && world.rank() != 0 && !rt.plan_.tag_all_ranks) {
        result = n.type && n.type->kind == sem::Type::Kind::Tuple ? Value::tuple({}) : Value();
        return true;
      }
      result = sem::kernel_for(p)(in, n.attrs);
      return true;
    }
    bool sharded = name == "shard_hint";
    uint32_t zero_out = 0;  // the ZeRO layout id the result keeps (step 6)
    if (rt.plan_.zero_stage > 0 && !sharded) {
      bool any = false;
      for (const Value& v : in) any |= is_zero(v);
      if (any) zero_out = gather_zero_inputs(n, in);
    }
    if (rt.plan_.sp_axis >= 0 && !sharded) sequence_shard_partials(n, in);
    std::vector<uint32_t> key;
    key.reserve(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      if (!in[i].is_tensor() && holds_shards(in[i])) in[i] = whole(in[i], n.inputs[i]->type);
      key.push_back(placement(in[i]));
      sharded |= key.back() != 0;
    }
    if (!sharded) {
      forget_unique(in);  // the kernel may write into an input it holds alone
      return false;
    }
    ++rt.stats_.sharded_applications;
    Choice& c = choice(n, std::move(key), in);
    if (name == "shard_hint" && rt.plan_.zero_stage > 0 && !n.attrs.has("data") &&
        in.size() == 1 && in[0].is_tensor() &&
        is_float(in[0].tensor.dtype()) && n.type && n.type->is_tensor())
      if (const std::optional<Layout> z = zero_layout(c.strategy.output, n.type->shape)) {
        if (!is_zero(in[0])) ++rt.stats_.placed_parameters;
        result = redistribute(in[0], *z, n.type, true);
        return true;
      }
    std::vector<TypeP> local_in;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i].is_tensor() && n.inputs[i]->type && n.inputs[i]->type->is_tensor())
        in[i] = redistribute(in[i], c.strategy.inputs.at(i), n.inputs[i]->type);
      local_in.push_back(in[i].is_tensor() ? in[i].tensor.type() : n.inputs[i]->type);
    }
    forget_unique(in);
    result = sem::kernel_for(p)(in, c.attrs);
    if (!c.scale_known) {
      std::vector<TypeP> global_in;
      for (const ir::Node* x : n.inputs) global_in.push_back(x->type);
      c.scale = parallel::output_scale(n, c.strategy, c.attrs, global_in, local_in,
                                       result.is_tensor() ? result.tensor.type() : nullptr);
      c.scale_known = true;
    }
    if (c.scale != 1 && result.is_tensor() && is_float(result.tensor.dtype()))
      result = sem::kernel_for(prim("mul"))(
          {result, Value(Tensor::scalar(result.tensor.dtype(), c.scale))}, {});
    tag(result, c.strategy);
    if (zero_out != 0 && result.is_tensor() && c.strategy.output == layouts.at(zero_out))
      set_placement(result, zero_out);
    return true;
  }

  Choice& choice(const ir::Node& n, std::vector<uint32_t> key, const std::vector<Value>& in) {
    auto k = std::make_pair(&n, std::move(key));
    auto it = choices.find(k);
    if (it != choices.end()) return it->second;
    std::vector<Layout> layouts_in;
    std::vector<TypeP> types;
    for (size_t i = 0; i < in.size(); ++i) {
      types.push_back(n.inputs[i]->type);
      layouts_in.push_back(layout(in[i], n.inputs[i]->type));
    }
    Choice c;
    c.strategy = parallel::choose_strategy(n, layouts_in, types, mesh, comm_model);
    const parallel::ShardingRule* rule = parallel::sharding_rule(*n.prim);
    c.attrs = rule && rule->local_attrs
                  ? rule->local_attrs(n.attrs, c.strategy, types, n.type, mesh)
                  : n.attrs;
    return choices.emplace(std::move(k), std::move(c)).first->second;
  }

  void tag(Value& result, const OpStrategy& s) {
    if (result.is_tensor()) {
      set_placement(result, id_of(s.output));
      return;
    }
    if (result.kind == Value::Kind::Tuple && result.elems && !s.tuple_outputs.empty()) {
      auto elems = std::make_shared<std::vector<Value>>(*result.elems);
      for (size_t i = 0; i < elems->size() && i < s.tuple_outputs.size(); ++i)
        if ((*elems)[i].is_tensor()) set_placement((*elems)[i], id_of(s.tuple_outputs[i]));
      result.elems = std::move(elems);
    }
  }

  // --- pipeline stages (step 9) ---

  std::shared_ptr<const parallel::pipeline::PipelineSetup> pipe;
  std::unique_ptr<StageRunner> runner;
  bool in_stage = false;
  bool keep_fetched = true;  // a fetched value is kept while its owned source lives
  // The global types of the empty placeholders of values owned by another stage.
  struct Absent {
    std::weak_ptr<sem::Storage> storage;
    TypeP type;
  };
  std::map<const sem::Storage*, Absent> absent;

  bool is_owned(const Value& v) const {
    const uint32_t id = placement(v);
    return id != 0 && owner_of.at(id) >= 0;
  }
  bool mine(uint32_t id) const { return owner_of.at(id) == runner->stage(); }
  // What a rank of another stage holds for an owned value of type `global`.
  Value placeholder(const TypeP& global, uint32_t id) {
    Value v(Tensor::empty(global->dtype, sem::Shape{0}));
    set_placement(v, id);
    if (absent.size() > 4096)
      std::erase_if(absent, [](const auto& e) { return e.second.storage.expired(); });
    absent[v.tensor.storage().get()] = {v.tensor.storage(), global};
    return v;
  }
  // A stage's layout (of its mesh's axes) on the world mesh (pp first).
  static Layout on_world(Layout l) {
    for (int& a : l.tensor_map)
      if (a >= 0) ++a;
    for (int& a : l.partial) ++a;
    return l;
  }
  // An owned value whole on every rank: its stage's shards summed over the pp axis (the other
  // stages add zeros), then gathered over the stage's mesh.
  Value fetch(const Value& v, const TypeP& global) {
    const uint32_t id = placement(v);
    const RedistKey key{v.tensor.storage().get(), id, 0, global->str()};
    if (auto hit = redistributed.find(key); hit != redistributed.end()) {
      if (hit->second.source.lock() == v.tensor.storage()) return hit->second.value;
      redistributed.erase(hit);
    }
    const Layout& l = layouts.at(id);
    Value local(mine(id) ? v.tensor : Tensor::zeros(global->dtype, l.local_shape(global->shape, mesh)));
    sem::Attrs a;
    a.set("axes", std::vector<int64_t>{0});
    a.set("mesh", mesh.shape);
    ++rt.stats_.collectives;
    ++rt.stats_.owned_fetches;
    rt.stats_.collective_bytes += static_cast<int64_t>(local.tensor.nbytes());
    auto& [count, bytes] = rt.stats_.by_collective["all_reduce"];
    ++count;
    bytes += static_cast<int64_t>(local.tensor.nbytes());
    Value out = sem::kernel_for(prim("all_reduce"))({local}, a);
    set_placement(out, id_of(l));
    out = whole(out, global);
    if (keep_fetched) {
      prune();
      redistributed[key] = {v.tensor.storage(), out};
    }
    return out;
  }
  // An elementwise primitive over owned values of one stage and layout with the output's shape
  // (and whole values of that shape or a single element): the owning stage runs it on its
  // shards, the others make a placeholder. Otherwise the owned inputs are fetched (false).
  bool owned_locally(const ir::Node& n, std::vector<Value>& in, Value& result) {
    uint32_t id = 0;
    bool local = elementwise_over_one_placement(n, in, &Impl::is_owned, id);
    for (size_t i = 0; i < in.size() && local; ++i) {
      if (is_owned(in[i]) || !in[i].is_tensor()) continue;
      const TypeP& t = n.inputs[i]->type;
      local = placement(in[i]) == 0 && t &&
              (in[i].tensor.numel() == 1 || t->shape == n.type->shape || layouts.at(id).is_replicated());
    }
    if (!local) {
      for (size_t i = 0; i < in.size(); ++i)
        if (is_owned(in[i])) in[i] = fetch(in[i], n.inputs[i]->type);
      return false;
    }
    if (!mine(id)) {
      result = placeholder(n.type, id);
      return true;
    }
    const Layout& l = layouts.at(id);
    for (size_t i = 0; i < in.size(); ++i)
      if (!is_owned(in[i]) && in[i].is_tensor() && in[i].tensor.numel() != 1 && !l.is_replicated())
        in[i] = redistribute(in[i], l, n.inputs[i]->type);  // a local slice
    forget_unique(in);
    result = sem::kernel_for(*n.prim)(in, n.attrs);
    set_placement(result, id);
    return true;
  }
  // v (whole, or placed otherwise) owned as `id`: this rank's shard, or a placeholder.
  Value own(const Value& v, const TypeP& global, uint32_t id) {
    if (placement(v) == id) return v;
    const Value w = whole(v, global);
    if (!mine(id)) return placeholder(global, id);
    const Layout& l = layouts.at(id);
    // A copy even when whole: the placement is the buffer's, and the whole buffer stays whole
    // on the other stages, so marking it here would make the ranks disagree about it.
    Value out = w;
    if (!l.is_replicated())
      out = Value(parallel::slice_block(w.tensor, l.shard_offset(global->shape, mesh, world.rank()),
                                        l.local_shape(global->shape, mesh)));
    else
      out = Value(w.tensor.clone());
    set_placement(out, id);
    return out;
  }

  // The call of the program's step (program_pipeline.h): the pipeline's schedule.
  Value pipeline_step(const ir::Graph& callee, std::vector<Value>& args) {
    const parallel::pipeline::PipelineSetup& s = *pipe;
    const ir::Graph& full = *s.full.step;
    if (args.size() != full.params.size())
      throw lang::UserError(fmt::format(
          "{}: the program's training step takes {} inputs, the pipeline's step {}: the "
          "program changed between the two compiles",
          rt.plan_.origin, args.size(), full.params.size()));
    for (size_t i = 0; i < args.size(); ++i)
      if (callee.params[i]->type->str() != full.params[i]->type->str())
        throw lang::UserError(fmt::format(
            "{}: the program's training step takes {} as input {} ('{}'), the pipeline's step {}",
            rt.plan_.origin, callee.params[i]->type->str(), i, full.params[i]->name,
            full.params[i]->type->str()));
    const size_t nleaves = s.full.param_names.size();
    // The leaves owned by their stages, in the stages' layouts (the same on every rank).
    std::vector<uint32_t> want(nleaves, 0);
    for (size_t st = 0; st < s.program.stages.size(); ++st)
      for (size_t j = 0; j < s.program.stages[st].params.size(); ++j)
        want.at(s.program.stages[st].params[j]) =
            id_of(on_world(s.parts[st].param_layouts[j]), false, static_cast<int>(st));
    for (size_t i = 0; i < nleaves; ++i) args[i] = own(args[i], full.params[i]->type, want[i]);
    const parallel::pipeline::StageProgram& sp = runner->program();
    std::vector<Tensor> local;
    for (size_t i : sp.params) local.push_back(args[i].tensor);
    // Every micro-batch of the data (made whole first when it arrives cut).
    const int M = s.spec.micro_batches;
    std::vector<std::vector<Tensor>> data(static_cast<size_t>(M));
    for (size_t j = 0; j < s.program.data.size(); ++j) {
      const size_t i = s.program.data[j];
      const TypeP& t = full.params[i]->type;
      // Cut over the stage's batch axis already (the data-parallel axis): micro-batch m is this
      // rank's m-th slice of its rows (the ranks of one stage coordinate on that axis hold the
      // same rows on every stage).
      const Layout want = on_world(runner->part().data_layouts.at(j));
      const Tensor& x = args[i].tensor;
      if (args[i].is_tensor() && placement(args[i]) != 0 && layout(args[i], t) == want &&
          want.rank() >= 1 && want.tensor_map[0] >= 0 && !want.is_partial() &&
          std::count(want.tensor_map.begin(), want.tensor_map.end(), -1) == want.rank() - 1 &&
          x.shape()[0] % M == 0) {
        sem::Shape shape = x.shape();
        shape[0] /= M;
        for (int m = 0; m < M; ++m) {
          std::vector<int64_t> offset(shape.size(), 0);
          offset[0] = m * shape[0];
          data[static_cast<size_t>(m)].push_back(parallel::slice_block(x, offset, shape));
        }
        continue;
      }
      const Value w = whole(args[i], t);
      for (int m = 0; m < M; ++m) data[static_cast<size_t>(m)].push_back(runner->micro_data(j, w.tensor, m));
    }
    double loss = 0;
    std::vector<Tensor> grads;
    {
      in_stage = true;
      struct Reset {
        bool& flag;
        ~Reset() { flag = false; }
      } reset{in_stage};
      grads = runner->step(local, data, loss);
    }
    ++rt.stats_.pipeline_steps;
    // The loss (the mean of the micro-batch losses, on the last stage's first rank) to every rank.
    const int S = s.spec.stages;
    const sem::TypeP loss_type = full.output->type->elems.at(0);
    Value l(Tensor::scalar(DType::f64, runner->stage() == S - 1 && runner->inner_rank() == 0 ? loss / M : 0.0));
    sem::Attrs a;
    std::vector<int64_t> axes;
    for (int x = 0; x < mesh.ndim(); ++x) axes.push_back(x);
    a.set("axes", axes);
    a.set("mesh", mesh.shape);
    l = sem::kernel_for(prim("all_reduce"))({l}, a);
    std::vector<Value> out{Value(Tensor::scalar(loss_type->dtype, l.tensor.item()))};
    std::vector<size_t> at(nleaves, SIZE_MAX);
    for (size_t j = 0; j < sp.params.size(); ++j) at[sp.params[j]] = j;
    for (size_t i = 0; i < nleaves; ++i) {
      if (at[i] == SIZE_MAX) {
        out.push_back(placeholder(full.params[i]->type, want[i]));
        continue;
      }
      Value g(grads.at(at[i]));
      set_placement(g, want[i]);
      out.push_back(g);
    }
    return Value::tuple(std::move(out));
  }

  // Whether every cut argument of the fusion group is an operand of one matmul, its only
  // reader, cut along that matmul's contraction alone (the plans without ZeRO, sequence
  // parallelism or a pipeline): its result is then a partial sum made whole by one all-reduce
  // when the fused runtime reads it (SpmdRuntime::install).
  bool cut_along_anchor_contraction(const ir::Graph& group, const std::vector<Value>& args) {
    if (pipe || rt.plan_.zero_stage > 0 || rt.plan_.sp_axis >= 0) return false;
    const ir::Node* anchor = nullptr;
    for (size_t k = 0; k < args.size() && k < group.params.size(); ++k) {
      if (!holds_shards(args[k])) continue;
      if (!args[k].is_tensor() || group.output == group.params[k]) return false;
      const ir::Node* reader = nullptr;
      int operand = -1;
      for (const ir::Node* n : group.nodes)
        for (size_t i = 0; i < n->inputs.size(); ++i)
          if (n->inputs[i] == group.params[k]) {
            if (reader) return false;
            reader = n, operand = static_cast<int>(i);
          }
      if (!reader || !reader->is_prim("matmul") || (anchor && anchor != reader)) return false;
      anchor = reader;
      const TypeP global = global_type(args[k]);
      const int rank = static_cast<int>(global->rank());
      if (rank < 2) return false;
      // The contraction axis as the operand is stored (matmul's transpose flags swap it).
      const sem::MatmulFlags t = sem::matmul_flags(reader->attrs);
      const bool flagged = operand == 0 ? t.a : t.b;
      const int contraction = (operand == 0) != flagged ? rank - 1 : rank - 2;
      const Layout l = layout(args[k], global);
      for (int d = 0; d < rank; ++d)
        if (l.pieces(d, mesh) > 1 && d != contraction) return false;
    }
    return true;
  }

  // How a fusion group runs on its shards: the layouts its arguments are first redistributed to
  // (nullopt: as they are) and those of its outputs.
  struct LocalGroup {
    std::vector<std::optional<Layout>> args;
    std::vector<Layout> outputs;
  };

  // Whether each node of a fusion group would run on its shards as they are: the strategy the
  // node-by-node run would choose keeps every input's layout (a partial sum stays one), needs
  // no rescaling and keeps the node's attributes; it may redistribute an argument that node
  // reads first (a partial gradient summed before the optimizer's update), which is done before
  // the kernel. The run of the nodes one by one would communicate nothing else, so the group's
  // kernel on the shards computes what it would. Nullopt otherwise (and under ZeRO, sequence
  // parallelism and pipelines, whose hooks place values their own way).
  std::optional<LocalGroup> local_group(const ir::Graph& group, const std::vector<Value>& args) {
    if (pipe || rt.plan_.zero_stage > 0 || rt.plan_.sp_axis >= 0) return std::nullopt;
    std::vector<uint32_t> key;
    for (const Value& a : args) {
      if (!a.is_tensor()) return std::nullopt;
      key.push_back(placement(a));
    }
    auto cached = local_groups.find({&group, key});
    if (cached != local_groups.end()) return cached->second;
    std::optional<LocalGroup>& out = local_groups[{&group, key}];
    LocalGroup g;
    g.args.resize(args.size());
    std::unordered_map<const ir::Node*, Layout> at;
    std::unordered_map<const ir::Node*, size_t> param_index;
    std::unordered_set<const ir::Node*> consumed;  // read by a node as it is
    for (size_t k = 0; k < group.params.size() && k < args.size(); ++k) {
      at.emplace(group.params[k], layout(args[k], group.params[k]->type));
      param_index[group.params[k]] = k;
    }
    auto layout_of = [&](const ir::Node* x) -> std::optional<Layout> {
      if (auto it = at.find(x); it != at.end()) return it->second;
      if (x->is_constant() && x->type && x->type->is_tensor())
        return Layout::replicated(static_cast<int>(x->type->rank()));
      return std::nullopt;
    };
    for (const ir::Node* n : group.nodes) {
      if (n->is_param() || n->is_constant() || (n == group.output && n->is_prim("make_tuple")))
        continue;
      if (!n->prim || !n->type || !n->type->is_tensor()) return out;
      std::vector<Layout> in;
      std::vector<TypeP> types;
      for (const ir::Node* x : n->inputs) {
        const std::optional<Layout> l = layout_of(x);
        if (!l) return out;
        in.push_back(*l);
        types.push_back(x->type);
      }
      const OpStrategy s = parallel::choose_strategy(*n, in, types, mesh, comm_model);
      if (s.inputs.size() != in.size() || s.output_scale != 1 || !s.tuple_outputs.empty())
        return out;
      for (size_t i = 0; i < in.size(); ++i) {
        const ir::Node* x = n->inputs[i];
        if (s.inputs[i] != in[i]) {
          const auto p = param_index.find(x);
          if (p == param_index.end() || consumed.count(x) || group.output == x) return out;
          g.args[p->second] = s.inputs[i];
          at[x] = s.inputs[i];
        }
        consumed.insert(x);
      }
      const parallel::ShardingRule* rule = parallel::sharding_rule(*n->prim);
      if (rule && rule->local_attrs &&
          !(rule->local_attrs(n->attrs, s, types, n->type, mesh) == n->attrs))
        return out;
      at[n] = s.output;
    }
    const bool tuple = group.output && group.output->is_prim("make_tuple");
    for (const ir::Node* o : tuple ? group.output->inputs : std::vector<ir::Node*>{group.output}) {
      const std::optional<Layout> l = layout_of(o);
      if (!l) return out;
      g.outputs.push_back(*l);
    }
    out = std::move(g);
    return out;
  }

  // A fusion group whose nodes all run on their shards (local_group): its kernel on this
  // rank's shards (compiled for their shapes: backends/codegen/fused_runtime.h), the results
  // placed as the nodes would leave them.
  bool run_local_group(const ir::Graph& group, const std::vector<Value>& args, Value& result) {
    const std::optional<LocalGroup> plan = local_group(group, args);
    if (!plan) return false;
    std::vector<Value> in = args;
    for (size_t k = 0; k < in.size(); ++k)
      if (plan->args[k]) in[k] = redistribute(in[k], *plan->args[k], group.params[k]->type);
    forget_unique(in);
    bool ran = false;
    {
      const sem::Restore<bool> local(in_local_group, true);
      ran = fused(group, in, result);
    }
    if (!ran) return false;
    const std::vector<Layout>& outs = plan->outputs;
    if (result.is_tensor() && outs.size() == 1) {
      set_placement(result, id_of(outs.front()));
    } else if (result.kind == Value::Kind::Tuple && result.elems &&
               result.elems->size() == outs.size()) {
      for (size_t i = 0; i < outs.size(); ++i) set_placement((*result.elems)[i], id_of(outs[i]));
    } else {
      return false;
    }
    ++rt.stats_.fused_local;
    return true;
  }

  // --- data (step 2) ---

  struct ShardedIterable : sem::Iterable {
    Impl& impl;
    std::shared_ptr<sem::Iterable> inner;
    ShardedIterable(Impl& i, std::shared_ptr<sem::Iterable> in) : impl(i), inner(std::move(in)) {}
    std::string describe() const override { return inner->describe() + " (sharded)"; }
    void reset() override { inner->reset(); }
    const runtime::data::BatchIterable* source = nullptr;  // reads this rank's rows itself
    bool next(Value& out) override {
      return inner->next(out) && (impl.shard_batch(out, source), true);
    }
    bool next_in(int64_t part, Value& out) override {
      return inner->next_in(part, out) && (impl.shard_batch(out, source), true);
    }
  };

  void wrap_iterable(Value& v) {
    auto inner = std::dynamic_pointer_cast<sem::Iterable>(v.opaque);
    if (v.kind != Value::Kind::Opaque || !inner) return;
    // A dataset reads only this rank's rows of each batch it can cut (runtime/data/dataset.h).
    auto sharded = std::make_shared<ShardedIterable>(*this, inner);
    if (auto batches = std::dynamic_pointer_cast<runtime::data::BatchIterable>(inner)) {
      const int axis = rt.plan_.data_axis;
      batches->set_shard(mesh.coords(world.rank()).at(static_cast<size_t>(axis)),
                         mesh.axis_size(axis));
      sharded->source = batches.get();
    }
    v.opaque = std::move(sharded);
  }

  // Cuts every tensor of a batch along dim 0 over the data axis, if the axis divides all; a
  // batch the dataset already read as this rank's rows (`source`) is only placed.
  void shard_batch(Value& batch, const runtime::data::BatchIterable* source) {
    const int axis = rt.plan_.data_axis;
    const int64_t p = mesh.axis_size(axis);
    std::vector<Value*> tensors;
    collect(batch, tensors);
    if (source && !tensors.empty() && tensors[0]->tensor.rank() >= 1 &&
        source->sharded(tensors[0]->tensor.shape()[0])) {
      for (Value* t : tensors)
        set_placement(*t, id_of(Layout::split(static_cast<int>(t->tensor.rank()), 0, axis)));
      ++rt.stats_.sharded_batches;
      return;
    }
    bool divides = !tensors.empty();
    for (Value* t : tensors) divides &= t->tensor.rank() >= 1 && t->tensor.shape()[0] % p == 0;
    if (!divides) {
      ++rt.stats_.whole_batches;
      return;
    }
    for (Value* t : tensors) {
      const TypeP global = t->tensor.type();
      *t = redistribute(*t, Layout::split(static_cast<int>(global->rank()), 0, axis), global);
    }
    ++rt.stats_.sharded_batches;
  }
  void collect(Value& v, std::vector<Value*>& out) {
    if (v.is_tensor()) {
      out.push_back(&v);
      return;
    }
    if ((v.kind == Value::Kind::Tuple || v.kind == Value::Kind::Record) && v.elems) {
      if (v.elems.use_count() > 1) v.elems = std::make_shared<std::vector<Value>>(*v.elems);
      for (Value& e : *v.elems) collect(e, out);
    }
  }
};

SpmdRuntime::SpmdRuntime(comm::Communicator& world, SpmdPlan plan) : plan_(std::move(plan)) {
  plan_.mesh.validate();
  if (plan_.mesh.size() != world.size())
    throw lang::UserError(fmt::format("the mesh {} of {} has {} devices, but the run has {} ranks",
                                      plan_.mesh.to_string(), plan_.origin, plan_.mesh.size(),
                                      world.size()));
  impl_ = std::make_unique<Impl>(*this, world);
}

SpmdRuntime::~SpmdRuntime() {
  if (impl_ && impl_->pipe) sem::set_call_hook(nullptr);
  sem::set_primitive_hook({});
  sem::set_host_value_hook({});
  if (impl_ && impl_->fused) sem::set_fused_kernel_hook(impl_->fused);
}

void SpmdRuntime::install() {
  Impl* impl = impl_.get();
  sem::set_primitive_hook([impl](const ir::Node& n, std::vector<Value>& in, Value& result) {
    return impl->on_primitive(n, in, result);
  });
  sem::set_host_value_hook([impl](Value& v) {
    if (!impl->in_local_group) v = impl->whole(v, impl->global_type(v));
  });
  if (impl->pipe)
    sem::set_call_hook([impl](const ir::Graph& callee, std::vector<Value>& args, Value& result,
                              const std::function<Value(std::vector<Value>&)>&) {
      if (callee.name != kPipelineStepGraph) return false;
      result = impl->pipeline_step(callee, args);
      return true;
    });
  // A fused group runs its compiled kernel when its arguments are whole, or when its shards are
  // the operands of its anchor matmul cut along the contraction (a weight gradient's matmul
  // over the batch's rows, then the optimizer's elementwise update;
  // cut_along_anchor_contraction): the fused runtime runs the anchor through the primitive
  // hook, reads its result whole (one all-reduce, as the nodes would), and refuses a shard of
  // any other argument by its shape (the kernel was compiled for whole shapes). A shard cut
  // another way (a forward matmul on the batch's rows) would have to be gathered for the
  // kernel; such a group runs its kernel on the shards when every node of it would run on its
  // shards as they are (run_local_group: a forward layer on the batch's rows), and otherwise
  // its nodes one by one through the primitive hook, its result staying cut.
  impl->fused = sem::current_fused_kernel_hook();
  if (impl->fused)
    sem::set_fused_kernel_hook(
        [impl](const ir::Graph& group, const std::vector<Value>& args, Value& result) {
          bool shards = false;
          for (const Value& a : args) shards |= impl->holds_shards(a);
          if (shards && !impl->cut_along_anchor_contraction(group, args))
            return impl->run_local_group(group, args, result);
          impl->forget_unique(args);
          if (!impl->fused(group, args, result)) return false;
          if (shards) ++impl->rt.stats_.fused_on_shards;
          return true;
        });
}

int SpmdRuntime::pin_parameters(ir::Module& m) const {
  if (!impl_->pipe) return pin_plan(m, plan_);
  // Step 9: every parameter's field, wherever the program builds it, owned by its stage.
  const parallel::pipeline::PipelineSetup& s = *impl_->pipe;
  std::map<std::string, std::string> layouts;
  std::map<std::string, int64_t> owners;
  for (size_t st = 0; st < s.program.stages.size(); ++st)
    for (size_t j = 0; j < s.program.stages[st].params.size(); ++j) {
      const std::string& name = s.full.param_names.at(s.program.stages[st].params[j]);
      layouts[name] = Impl::on_world(s.parts[st].param_layouts[j]).to_string(plan_.mesh);
      owners[name] = static_cast<int64_t>(st);
    }
  return parallel::pin_record_fields(m, layouts, &plan_.mesh, plan_.origin, false, false, &owners);
}

void SpmdRuntime::set_profiler(runtime::RunProfiler* profiler) {
  if (impl_->runner) impl_->runner->set_profiler(profiler);
}

void SpmdRuntime::set_pipeline(std::shared_ptr<const parallel::pipeline::PipelineSetup> setup) {
  impl_->pipe = std::move(setup);
  impl_->runner = std::make_unique<StageRunner>(*impl_->pipe, impl_->world);
}

void configure_recompute(const SpmdPlan& plan, sem::LowerOptions& options,
                         std::shared_ptr<RecomputeChoice> seen) {
  options.materialize_models = true;
  if (!plan.recompute_all && plan.recompute.empty()) return;
  options.recompute = [&plan, seen](const std::string& path) {
    if (path.empty()) return false;
    const auto dots = std::count(path.begin(), path.end(), '.');
    if (dots == 1) seen->layers.insert(path);
    const bool chosen = plan.recompute_all ? dots == 1
                                           : std::find(plan.recompute.begin(), plan.recompute.end(),
                                                       path) != plan.recompute.end();
    if (chosen) seen->chosen.insert(path);
    return chosen;
  };
}

void check_recompute(const SpmdPlan& plan, const RecomputeChoice& seen) {
  for (const std::string& name : plan.recompute)
    if (!seen.chosen.count(name))
      throw lang::UserError(fmt::format(
          "{}: recompute names '{}', which is not a layer the program differentiates (its "
          "layers: {})",
          plan.origin, name,
          seen.layers.empty() ? std::string("none") : fmt::format("{}", fmt::join(seen.layers, ", "))));
  if (plan.recompute_all && seen.chosen.empty())
    throw lang::UserError(fmt::format(
        "{}: \"recompute\": true, but the program differentiates no model with layers",
        plan.origin));
}

int pin_plan(ir::Module& m, const SpmdPlan& plan) {
  const int n = parallel::pin_record_fields(m, plan.params, &plan.mesh, plan.origin,
                                            plan.zero_stage > 0, plan.zero_stage >= 2);
  if (plan.zero_stage > 0 && n == 0)
    throw lang::UserError(fmt::format(
        "{}: ZeRO stage {} shards the records of a model (parameters, gradients, optimizer "
        "state), and the program builds none: declare its parameters in a model",
        plan.origin, plan.zero_stage));
  return n;
}

int SpmdRuntime::rank() const { return impl_->world.rank(); }

Value SpmdRuntime::whole(const Value& v) {
  return impl_->whole(v, v.is_tensor() ? impl_->global_type(v) : nullptr);
}

parallel::Layout SpmdRuntime::layout_of(const Value& v) const {
  return impl_->layout(v, v.is_tensor() ? impl_->global_type(v) : nullptr);
}

}  // namespace spora::distributed
