// pin_record_fields: see pin_fields.h.
#include "parallel/partition/pin_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "lang/diagnostics.h"
#include "semantics/registry.h"

namespace spora::parallel {

namespace {

struct Pinner {
  explicit Pinner(ir::Module& module) : m(module) {}
  ir::Module& m;
  std::map<std::string, std::string> by_path;  // "l1.w" -> layout text
  std::map<std::string, int64_t> owner_by_path;  // "l1.w" -> the owning pipeline stage
  const sem::Primitive* hint = nullptr;
  const Mesh* mesh = nullptr;
  std::string origin;
  std::map<std::string, std::string> names;  // path -> the strategy's name for it
  bool every_model_field = false;
  bool early = false;
  int inserted = 0;
  std::set<std::string> matched, seen;  // paths pinned; every tensor path of a record

  void pin(ir::Graph* g, ir::Node* record, const std::string& prefix) {
    const std::vector<std::string>& names = record->type->names;
    for (size_t i = 0; i < record->inputs.size() && i < names.size(); ++i) {
      const std::string path = prefix + names[i];
      ir::Node* x = record->inputs[i];
      if (x->type && x->type->is_tensor()) seen.insert(path);
      auto it = by_path.find(path);
      const bool named = it != by_path.end() && x->type && x->type->is_tensor();
      const bool model_field = every_model_field && !record->type->name.empty() && x->type &&
                               x->type->is_tensor() && x->type->rank() >= 1 &&
                               is_float(x->type->dtype);
      if (named || model_field) {
        if (named) {
          check(path, it->second, *x->type);
          matched.insert(path);
        }
        if (x->is_prim("shard_hint")) continue;
        sem::Attrs a;
        a.set("layout", named ? it->second
                              : Layout::replicated(static_cast<int>(x->type->rank())).to_string());
        if (auto o = owner_by_path.find(path); named && o != owner_by_path.end())
          a.set("owner", o->second);
        if (x->is_param() && x->graph) {
          record->inputs[i] = hint_param(x, a);
          continue;
        }
        ir::Node* h = m.add_apply(g, hint, {x}, a, x->type, x->loc);
        // add_apply appends: move the hint just before the record (early: just after x).
        g->nodes.pop_back();
        auto def = early ? std::find(g->nodes.begin(), g->nodes.end(), x) : g->nodes.end();
        if (def != g->nodes.end())
          g->nodes.insert(std::next(def), h);
        else
          g->nodes.insert(std::find(g->nodes.begin(), g->nodes.end(), record), h);
        record->inputs[i] = h;
        ++inserted;
      } else if (x->is_prim("make_record")) {
        pin(g, x, path + ".");
      }
    }
  }

  // A graph parameter (loop-carried state, a function's argument) is hinted once, first in its
  // graph, and every use of it reads the hint: a loop's parameters and state are placed from
  // the first iteration on, before the first record that names them is built.
  std::map<ir::Node*, ir::Node*> param_hints;
  ir::Node* hint_param(ir::Node* x, const sem::Attrs& a) {
    if (auto it = param_hints.find(x); it != param_hints.end()) return it->second;
    ir::Graph* owner = x->graph;
    ir::Node* h = m.add_apply(owner, hint, {x}, a, x->type, x->loc);
    owner->nodes.pop_back();
    owner->nodes.insert(owner->nodes.begin(), h);
    for (const auto& graph : m.graphs()) {
      for (ir::Node* n : graph->nodes)
        if (n != h)
          for (ir::Node*& in : n->inputs)
            if (in == x) in = h;
      if (graph->output == x) graph->output = h;
    }
    param_hints.emplace(x, h);
    ++inserted;
    return h;
  }

  void check(const std::string& path, const std::string& text, const sem::Type& t) const {
    if (!mesh) return;
    try {
      Layout::parse(text, *mesh, static_cast<int>(t.rank())).validate(*mesh, t.shape);
    } catch (const lang::UserError& e) {
      throw lang::UserError(
          fmt::format("{}: the layout \"{}\" of {} does not fit its type {} on "
                      "the mesh {}: {}",
                      origin, text, names.at(path), t.str(), mesh->to_string(), e.what()));
    }
  }
};

}  // namespace

int pin_record_fields(ir::Module& m, const std::map<std::string, std::string>& layouts_by_name,
                      const Mesh* mesh, const std::string& origin, bool every_model_field,
                      bool early, const std::map<std::string, int64_t>* owners) {
  if (layouts_by_name.empty() && !every_model_field) return 0;
  Pinner p(m);
  p.every_model_field = every_model_field;
  p.early = early;
  p.mesh = mesh;
  p.origin = origin;
  for (const auto& [name, text] : layouts_by_name) {
    const size_t dot = name.find('.');
    const std::string path = dot == std::string::npos ? name : name.substr(dot + 1);
    p.by_path[path] = text;
    p.names[path] = name;
    if (owners)
      if (auto o = owners->find(name); o != owners->end()) p.owner_by_path[path] = o->second;
  }
  p.hint = sem::Registry::instance().find("shard_hint");
  if (!p.hint) throw lang::InternalError("pin_record_fields needs the primitive shard_hint");
  for (const auto& g : m.graphs()) {
    const std::vector<ir::Node*> nodes = g->nodes;  // pin() inserts into g->nodes
    for (ir::Node* n : nodes)
      if (n->is_apply() && n->is_prim("make_record") && n->type) p.pin(g.get(), n, "");
  }
  for (const auto& [path, name] : p.names)
    if (!p.matched.count(path)) {
      const size_t dot = name.find('.');
      const std::string var = dot == std::string::npos ? "" : name.substr(0, dot + 1);
      std::vector<std::string> known;
      for (const std::string& seen : p.seen) known.push_back(var + seen);
      if (known.size() > 24) {
        known.resize(24);
        known.push_back("...");
      }
      throw lang::UserError(fmt::format(
          "{}: '{}' names no field of a record the program builds (fields: {})", origin, name,
          known.empty() ? std::string("none") : fmt::format("{}", fmt::join(known, ", "))));
    }
  return p.inserted;
}

}  // namespace spora::parallel
