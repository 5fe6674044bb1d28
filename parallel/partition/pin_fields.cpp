// pin_record_fields: see pin_fields.h.
#include "parallel/partition/pin_fields.h"

#include <algorithm>

#include "lang/diagnostics.h"
#include "semantics/registry.h"

namespace spora::parallel {

namespace {

struct Pinner {
  ir::Module& m;
  std::map<std::string, std::string> by_path;  // "l1.w" -> layout text
  const sem::Primitive* hint = nullptr;
  int inserted = 0;

  bool wanted_below(const std::string& prefix) const {
    auto it = by_path.lower_bound(prefix);
    return it != by_path.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  }

  void pin(ir::Graph* g, ir::Node* record, const std::string& prefix) {
    const std::vector<std::string>& names = record->type->names;
    for (size_t i = 0; i < record->inputs.size() && i < names.size(); ++i) {
      const std::string path = prefix + names[i];
      ir::Node* x = record->inputs[i];
      if (auto it = by_path.find(path); it != by_path.end() && x->type && x->type->is_tensor()) {
        if (x->is_prim("shard_hint")) continue;
        sem::Attrs a;
        a.set("layout", it->second);
        ir::Node* h = m.add_apply(g, hint, {x}, a, x->type, x->loc);
        // add_apply appends: move the hint just before the record.
        g->nodes.pop_back();
        g->nodes.insert(std::find(g->nodes.begin(), g->nodes.end(), record), h);
        record->inputs[i] = h;
        ++inserted;
      } else if (x->is_prim("make_record") && wanted_below(path + ".")) {
        pin(g, x, path + ".");
      }
    }
  }
};

}  // namespace

int pin_record_fields(ir::Module& m, const std::map<std::string, std::string>& layouts_by_name) {
  if (layouts_by_name.empty()) return 0;
  Pinner p{m, {}};
  for (const auto& [name, text] : layouts_by_name) {
    const size_t dot = name.find('.');
    p.by_path[dot == std::string::npos ? name : name.substr(dot + 1)] = text;
  }
  p.hint = sem::Registry::instance().find("shard_hint");
  if (!p.hint) throw lang::InternalError("pin_record_fields needs the primitive shard_hint");
  for (const auto& g : m.graphs()) {
    const std::vector<ir::Node*> nodes = g->nodes;  // pin() inserts into g->nodes
    for (ir::Node* n : nodes)
      if (n->is_apply() && n->is_prim("make_record") && n->type) p.pin(g.get(), n, "");
  }
  return p.inserted;
}

}  // namespace spora::parallel
