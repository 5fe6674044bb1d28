// Operator fusion (algorithm in fusion.h).
#include "semantics/passes/fusion.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "semantics/passes/cse.h"
#include "semantics/passes/dce.h"
#include "semantics/passes/fusion_kind.h"
#include "semantics/passes/fusion_plan.h"
#include "semantics/passes/util.h"
#include "semantics/shape_rules.h"

namespace spora::passes {

bool is_fused_graph(const ir::Graph& g) { return g.has_flag(kFusedFlag); }

namespace {

bool scalar_constant(const Node* n) {
  return n->is_constant() && !n->graph_value && n->value.is_tensor() &&
         n->value.tensor.numel() == 1;
}

bool static_tensor(const Node* n) {
  if (!n->type || !n->type->is_tensor()) return false;
  return std::all_of(n->type->shape.begin(), n->type->shape.end(), [](int64_t d) { return d > 0; });
}

bool is_view(const Node* n) {
  static const std::set<std::string> views = {
      "reshape", "flatten", "squeeze", "unsqueeze", "expand_dims", "identity", "stop_gradient"};
  return n->prim && views.count(n->prim->name);
}

bool is_layout(const Node* n) {
  return n->prim && (n->prim->name == "transpose" || n->prim->name == "permute");
}

int64_t numel_of(const Node* n) {
  if (!n->type || !n->type->is_tensor()) return 0;
  int64_t k = 1;
  for (int64_t d : n->type->shape) k *= d;
  return k;
}

int debug_level() {
  const char* v = std::getenv("SPORA_DEBUG_FUSION");
  return v ? std::atoi(v) : 0;
}

// Nodes read by a graph other than their own (closures, outputs of nested graphs).
std::unordered_set<const Node*> cross_graph_uses(const Module& m) {
  std::unordered_set<const Node*> out;
  for (const auto& g : m.graphs()) {
    for (const Node* n : g->nodes)
      for (const Node* x : n->inputs)
        if (x && x->graph != g.get()) out.insert(x);
    if (g->output && g->output->graph != g.get()) out.insert(g->output);
  }
  return out;
}

class GraphFusion {
 public:
  GraphFusion(Module& m, Graph* g, const Effects& effects,
              const std::unordered_set<const Node*>& cross, const FusionOptions& options,
              FusionStats& stats)
      : m_(m), g_(g), effects_(effects), cross_(cross), options_(options), stats_(stats) {}

  void run() {
    build();
    if (n_ < 2) return;
    dominators();
    parent_.resize(n_);
    gkind_ = kind_;
    members_.assign(n_, {});
    for (int i = 0; i < n_; ++i) {
      parent_[i] = i;
      members_[i] = {i};
    }
    for (int phase = 0; phase < 2; ++phase) vertical(phase);
    if (options_.horizontal) horizontal();
    materialize();
  }

 private:
  Module& m_;
  Graph* g_;
  const Effects& effects_;
  const std::unordered_set<const Node*>& cross_;
  const FusionOptions& options_;
  FusionStats& stats_;

  int n_ = 0;
  std::vector<Node*> nodes_;
  std::unordered_map<const Node*, int> index_;
  std::vector<FusionKind> kind_;
  std::vector<bool> free_, escape_;
  std::vector<std::vector<int>> users_, succ_;
  std::vector<int> ipdom_, depth_;
  int exit_ = 0;
  std::vector<int> parent_;
  std::vector<FusionKind> gkind_;
  std::vector<std::vector<int>> members_;  // at group roots, sorted

  using Cond = std::function<bool(FusionKind, bool)>;

  // ---- 1. dataflow ----

  static std::vector<Graph*> graphs_run_by(const Node* n) {
    std::vector<Graph*> out;
    if (n->callee) out.push_back(n->callee);
    for (const Node* x : n->inputs)
      if (x && x->graph_value) out.push_back(x->graph_value);
    return out;
  }

  void build() {
    nodes_ = g_->nodes;
    n_ = static_cast<int>(nodes_.size());
    for (int i = 0; i < n_; ++i) index_[nodes_[i]] = i;
    kind_.assign(n_, FusionKind::Opaque);
    free_.assign(n_, false);
    escape_.assign(n_, false);
    users_.assign(n_, {});
    succ_.assign(n_, {});
    for (int i = 0; i < n_; ++i) {
      const Node* n = nodes_[i];
      free_[i] = scalar_constant(n);
      if (n->is_apply() && n->prim && !n->callee && static_tensor(n) && !effects_.node(n) &&
          !touches_state(*n))
        kind_[i] = fusion_kind(*n->prim, n->attrs);
      escape_[i] = cross_.count(n) > 0 || g_->output == n;
    }
    auto add_user = [&](int producer, int user) {
      auto& u = users_[producer];
      if (std::find(u.begin(), u.end(), user) == u.end()) u.push_back(user);
    };
    std::unordered_map<const Graph*, std::vector<Node*>> free_vars;
    for (int i = 0; i < n_; ++i) {
      const Node* n = nodes_[i];
      for (const Node* x : n->inputs) {
        auto it = x ? index_.find(x) : index_.end();
        if (it != index_.end()) add_user(it->second, i);
      }
      for (Graph* h : graphs_run_by(n)) {
        auto fv = free_vars.find(h);
        if (fv == free_vars.end()) fv = free_vars.emplace(h, ir::free_variables(h)).first;
        for (const Node* x : fv->second) {
          auto it = index_.find(x);
          if (it != index_.end() && it->second < i) add_user(it->second, i);
        }
      }
    }
    int last_effect = -1;
    for (int i = 0; i < n_; ++i) {
      succ_[i] = users_[i];
      if (effects_.node(nodes_[i])) {
        if (last_effect >= 0) succ_[last_effect].push_back(i);
        last_effect = i;
      }
    }
  }

  // ---- 2. post-dominators ----

  int lca(int a, int b) const {
    while (a != b) {
      if (depth_[a] < depth_[b]) std::swap(a, b);
      a = ipdom_[a];
    }
    return a;
  }

  void dominators() {
    exit_ = n_;
    ipdom_.assign(n_ + 1, exit_);
    depth_.assign(n_ + 1, 0);
    for (int i = n_ - 1; i >= 0; --i) {
      int d = exit_;
      if (!escape_[i] && !users_[i].empty()) {
        d = users_[i][0];
        for (size_t k = 1; k < users_[i].size(); ++k) d = lca(d, users_[i][k]);
      }
      ipdom_[i] = d;
      depth_[i] = depth_[d] + 1;
    }
  }

  // ---- 3. groups ----

  int find(int i) {
    while (parent_[i] != i) {
      parent_[i] = parent_[parent_[i]];
      i = parent_[i];
    }
    return i;
  }

  // Every path from src (exclusive) reaches sink with cond(kind of the node's group, is sink).
  bool check_path(int src, int sink, const Cond& cond, std::vector<int>* visited = nullptr) {
    std::vector<char> seen(n_, 0);
    std::vector<int> stack(users_[src].begin(), users_[src].end());
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (seen[v]) continue;
      seen[v] = 1;
      if (!cond(gkind_[find(v)], v == sink)) return false;
      if (visited) visited->push_back(v);
      if (v == sink) continue;
      if (escape_[v]) return false;  // cannot happen below a post-dominator
      for (int u : users_[v]) stack.push_back(u);
    }
    return true;
  }

  GroupSpec spec_of(const std::vector<int>& members) const {
    GroupSpec spec;
    std::unordered_set<const Node*> in_group;
    for (int i : members) in_group.insert(nodes_[i]);
    std::unordered_set<const Node*> seen_input;
    for (int i : members) {
      const Node* n = nodes_[i];
      spec.nodes.push_back(n);
      for (const Node* x : n->inputs)
        if (!in_group.count(x) && !scalar_constant(x) && seen_input.insert(x).second)
          spec.inputs.push_back(x);
    }
    for (int i : members) {
      bool out = escape_[i];
      for (int u : users_[i]) out = out || !in_group.count(nodes_[u]);
      if (out) spec.outputs.push_back(nodes_[i]);
    }
    return spec;
  }

  // No path leaves the group and comes back, in the graph where every other group is one node
  // (reaching one member of a group reaches all of its successors): contracting the group
  // keeps the graph of groups acyclic. Only nodes before the group's last member can lead back.
  bool convex(const std::vector<int>& members) {
    std::vector<char> in(n_, 0), seen(n_, 0);
    for (int i : members) in[i] = 1;
    const int last = members.back();
    std::vector<int> stack;
    for (int i : members)
      for (int u : succ_[i])
        if (!in[u] && u < last) stack.push_back(u);
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      const int root = find(v);
      if (seen[root]) continue;
      seen[root] = 1;
      for (int w : members_[root])
        for (int u : succ_[w]) {
          if (in[u]) return false;
          if (u < last) stack.push_back(u);
        }
    }
    return true;
  }

  bool acceptable(const std::vector<int>& members) {
    if (members.size() > options_.max_group_size) return false;
    for (int i : members)
      if (kind_[i] == FusionKind::Opaque) return false;
    if (!convex(members)) return false;
    std::string why;
    if (!plan_group(spec_of(members), &why)) {
      if (debug_level() >= 2) {
        std::cerr << "fusion: @" << g_->name << ": no loop nest for {";
        for (int i : members) std::cerr << " " << nodes_[i]->prim->name;
        std::cerr << " }: " << why << "\n";
      }
      return false;
    }
    return true;
  }

  // Merges the groups of `roots` (distinct roots) into the group of `into` if acceptable.
  bool merge(const std::vector<int>& roots, int into) {
    std::vector<int> all;
    for (int r : roots) all.insert(all.end(), members_[r].begin(), members_[r].end());
    std::sort(all.begin(), all.end());
    if (!acceptable(all)) return false;
    FusionKind k = gkind_[into];
    for (int r : roots) {
      k = std::max(k, gkind_[r]);
      if (r != into) {
        parent_[r] = into;
        members_[r].clear();
      }
    }
    gkind_[into] = k;
    members_[into] = std::move(all);
    return true;
  }

  void vertical(int phase) {
    for (int i = 0; i < n_; ++i) {
      if (free_[i]) continue;
      const int gi = find(i);
      const FusionKind k = gi == i ? gkind_[gi] : kind_[i];
      if (k == FusionKind::Opaque) continue;
      const int d = ipdom_[i];
      if (d == exit_ || find(d) == gi) continue;
      Cond cond;
      if (k == FusionKind::OutputFusable) {
        if (phase != 0) continue;
        cond = [](FusionKind x, bool) { return x <= FusionKind::Broadcast; };
      } else if (k <= FusionKind::Broadcast) {
        cond = [](FusionKind x, bool sink) {
          return sink ? x <= FusionKind::Reduction || x == FusionKind::OutputFusable
                      : x <= FusionKind::Injective;
        };
      } else if (k == FusionKind::Injective) {
        if (phase != 1) continue;
        cond = [](FusionKind x, bool) { return x <= FusionKind::Injective; };
      } else {  // Reduction: elementwise epilogues, and the next reductions of the same rows
        if (phase != 1) continue;
        cond = [](FusionKind x, bool) { return x <= FusionKind::Reduction; };
      }
      std::vector<int> path;
      if (!check_path(i, d, cond, &path)) continue;
      std::vector<int> roots{gi};
      for (int v : path) {
        const int r = find(v);
        if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
      }
      merge(roots, find(d));
    }
  }

  // Phase 2 merges groups that iterate the same domain only (two groups whose element counts
  // merely coincide gain nothing from one loop nest).
  bool try_merge(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b || gkind_[a] == FusionKind::Opaque || gkind_[b] == FusionKind::Opaque) return false;
    auto pa = plan_group(spec_of(members_[a]));
    auto pb = plan_group(spec_of(members_[b]));
    if (!pa || !pb || pa->domain != pb->domain) return false;
    return merge({a, b}, std::max(a, b));
  }

  void horizontal() {
    // Siblings: groups reading the same input.
    std::vector<const Node*> order;
    std::unordered_map<const Node*, std::vector<int>> readers;
    for (int i = 0; i < n_; ++i) {
      if (free_[i] || kind_[i] == FusionKind::Opaque) continue;
      for (const Node* x : nodes_[i]->inputs) {
        if (!x || numel_of(x) <= 1) continue;
        auto it = index_.find(x);
        if (it != index_.end() && find(it->second) == find(i)) continue;
        auto& r = readers[x];
        if (r.empty()) order.push_back(x);
        if (std::find(r.begin(), r.end(), i) == r.end()) r.push_back(i);
      }
    }
    for (const Node* x : order) {
      const auto& r = readers[x];
      for (size_t k = 1; k < r.size(); ++k) try_merge(r[0], r[k]);
    }
    // Producers and consumers.
    for (int i = 0; i < n_; ++i) {
      if (free_[i] || kind_[i] == FusionKind::Opaque) continue;
      for (int u : users_[i]) try_merge(i, u);
    }
  }

  // ---- 5. fused graphs ----

  void materialize() {
    const auto& reg = sem::Registry::instance();
    const sem::Primitive* make_tuple = reg.find("make_tuple");
    const sem::Primitive* tuple_get = reg.find("tuple_get");
    Substitution subst;
    std::unordered_set<const Node*> doomed;
    std::unordered_map<const Node*, int> priority;  // new nodes: where their group began
    for (int root = 0; root < n_; ++root) {
      if (find(root) != root) continue;
      std::vector<int> mem = members_[root];
      // An anchor (matmul, conv2d) whose own result is needed outside the group (a conv's
      // pre-activation, read again by the backward pass) leaves it: the loop nest would only
      // write the library kernel's result over itself. The rest of the group still fuses.
      {
        const std::unordered_set<const Node*> in_group = [&] {
          std::unordered_set<const Node*> g;
          for (int i : mem) g.insert(nodes_[i]);
          return g;
        }();
        std::vector<int> rest = mem;
        std::erase_if(rest, [&](int i) {
          if (kind_[i] != FusionKind::OutputFusable) return false;
          bool out = escape_[i];
          for (int u : users_[i]) out = out || !in_group.count(nodes_[u]);
          return out;
        });
        // (The rest reads the anchor's result as an input; keep the group whole in the
        // unlikely case that the rest alone is not one loop nest.)
        if (rest.size() != mem.size() && (rest.size() < 2 || plan_group(spec_of(rest))))
          mem = std::move(rest);
      }
      if (mem.size() < 2) continue;
      // Only views and layout changes (reshape + permute): no arithmetic to save a pass over
      // memory, and the backend's copy engine (register-blocked transposes, runs of memcpy)
      // moves the data as fast as a generated gathering loop or faster: a [1024, 1024]
      // transpose feeding a matmul took 0.71 ms against 2.58 ms generated, the attention
      // heads' permute 54 against 57 us (benchmarks/results/movement_groups_amd_epyc.txt).
      if (std::all_of(mem.begin(), mem.end(),
                      [&](int i) { return is_view(nodes_[i]) || is_layout(nodes_[i]); }))
        continue;
      GroupSpec spec = spec_of(mem);
      Graph* f = m_.add_graph("fused_" + g_->name);
      f->flags.push_back(kFusedFlag);
      f->loc = nodes_[mem.front()]->loc;
      std::unordered_map<const Node*, Node*> map;
      for (size_t k = 0; k < spec.inputs.size(); ++k) {
        const Node* x = spec.inputs[k];
        map[x] = m_.add_param(f, "p" + std::to_string(k), x->type, x->loc);
      }
      for (const Node* n : spec.nodes) {
        std::vector<Node*> in;
        for (Node* x : n->inputs) {
          auto it = map.find(x);
          if (it == map.end() && scalar_constant(x))
            it = map.emplace(x, m_.add_constant(f, x->value, x->loc)).first;
          in.push_back(it->second);
        }
        map[n] = m_.add_apply(f, n->prim, std::move(in), n->attrs, n->type, n->loc);
      }
      if (spec.outputs.size() == 1) {
        f->output = map.at(spec.outputs[0]);
      } else {
        std::vector<Node*> outs;
        std::vector<sem::TypeP> types;
        for (const Node* o : spec.outputs) {
          outs.push_back(map.at(o));
          types.push_back(o->type);
        }
        f->output = m_.add_apply(f, make_tuple, std::move(outs), {}, sem::Type::tuple(types));
      }
      std::vector<Node*> args;
      for (const Node* x : spec.inputs) args.push_back(const_cast<Node*>(x));
      const Node* last = nodes_[mem.back()];
      Node* call = m_.add_call(g_, f, std::move(args), f->output->type, last->loc);
      priority[call] = mem.front();
      if (spec.outputs.size() == 1) {
        subst.replace(const_cast<Node*>(spec.outputs[0]), call);
      } else {
        for (size_t k = 0; k < spec.outputs.size(); ++k) {
          sem::Attrs a;
          a.set("index", static_cast<int64_t>(k));
          Node* get = m_.add_apply(g_, tuple_get, {call}, a, spec.outputs[k]->type, last->loc);
          priority[get] = mem.front();
          subst.replace(const_cast<Node*>(spec.outputs[k]), get);
        }
      }
      for (int i : mem) doomed.insert(nodes_[i]);
      ++stats_.groups;
      stats_.fused_nodes += mem.size();
      if (debug_level() >= 1) {
        std::cerr << "fusion: @" << f->name << " <-";
        for (int i : mem) std::cerr << " " << nodes_[i]->prim->name;
        std::cerr << "\n";
      }
    }
    if (priority.empty()) return;
    subst.apply(m_);
    // Scalar constants only the groups read were copied into them.
    std::unordered_set<const Node*> read;
    for (const Node* n : g_->nodes)
      if (!doomed.count(n))
        for (const Node* x : n->inputs) read.insert(x);
    for (const Node* n : g_->nodes)
      if (scalar_constant(n) && !read.count(n) && !cross_.count(n) && g_->output != n)
        doomed.insert(n);
    erase_nodes(m_, doomed);
    schedule(priority);
  }

  // Stable topological order of g's nodes: old nodes keep their positions, a group's call and
  // tuple_gets come where the group began, effects stay in order.
  void schedule(const std::unordered_map<const Node*, int>& priority) {
    std::vector<Node*> list = g_->nodes;
    const size_t n = list.size();
    std::unordered_map<const Node*, size_t> pos;
    for (size_t i = 0; i < n; ++i) pos[list[i]] = i;
    auto prio = [&](size_t i) -> std::pair<int, size_t> {
      auto it = priority.find(list[i]);
      const int p = it != priority.end() ? it->second : index_.at(list[i]);
      return {p, i};
    };
    std::vector<std::vector<size_t>> out(n);
    std::vector<int> indegree(n, 0);
    auto edge = [&](size_t a, size_t b) {
      out[a].push_back(b);
      ++indegree[b];
    };
    std::unordered_map<const Graph*, std::vector<Node*>> free_vars;
    std::vector<size_t> effects;
    for (size_t i = 0; i < n; ++i) {
      std::set<size_t> deps;
      for (const Node* x : list[i]->inputs) {
        auto it = x ? pos.find(x) : pos.end();
        if (it != pos.end()) deps.insert(it->second);
      }
      for (Graph* h : graphs_run_by(list[i])) {
        auto fv = free_vars.find(h);
        if (fv == free_vars.end()) fv = free_vars.emplace(h, ir::free_variables(h)).first;
        for (const Node* x : fv->second) {
          auto it = pos.find(x);
          if (it != pos.end() && it->second != i) deps.insert(it->second);
        }
      }
      for (size_t d : deps) edge(d, i);
      if (effects_.node(list[i])) effects.push_back(i);
    }
    std::sort(effects.begin(), effects.end(),
              [&](size_t a, size_t b) { return prio(a) < prio(b); });
    for (size_t k = 1; k < effects.size(); ++k) edge(effects[k - 1], effects[k]);
    using Item = std::pair<std::pair<int, size_t>, size_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
    for (size_t i = 0; i < n; ++i)
      if (indegree[i] == 0) ready.push({prio(i), i});
    std::vector<Node*> sorted;
    while (!ready.empty()) {
      const size_t i = ready.top().second;
      ready.pop();
      sorted.push_back(list[i]);
      for (size_t j : out[i])
        if (--indegree[j] == 0) ready.push({prio(j), j});
    }
    if (sorted.size() != n)
      throw lang::InternalError("fusion: no schedule for the fused graph @" + g_->name);
    g_->nodes = std::move(sorted);
  }
};

// The permutation a transpose / permute node n applies (sem::permutation), for a tensor input
// of rank 2 or more; none otherwise.
std::optional<std::vector<int64_t>> layout_permutation(const Node* n) {
  if (!n->is_apply() || !is_layout(n) || n->inputs.size() != 1) return std::nullopt;
  const sem::TypeP& t = n->inputs[0]->type;
  if (!t || !t->is_tensor() || t->rank() < 2) return std::nullopt;
  return sem::permutation(n->attrs, t->rank());
}

// How many times each node is read: by applies of any graph, and as a graph's output.
std::unordered_map<const Node*, int> use_counts(const Module& m) {
  std::unordered_map<const Node*, int> uses;
  for (const auto& g : m.graphs()) {
    for (const Node* n : g->nodes)
      for (const Node* in : n->inputs) ++uses[in];
    if (g->output) ++uses[g->output];
  }
  return uses;
}

// The operand a product reads, through its flag, in place of the layout change t of x whose
// permutation is perm: x itself when perm swaps the last two axes only; else, when perm is q
// followed by that swap with q keeping the last axis innermost (attention's keys as
// heads(k) transposed: [0,2,3,1] = [0,2,1,3] then the swap), permute(x, q), a copy of
// contiguous runs instead of an element-by-element transpose: a node that already computes it
// before `at` in g, else a new one right before `at` when the product is t's only reader.
// Null when neither applies.
Node* flag_operand(Module& m, Graph* g, Node* at, Node* t, std::vector<int64_t> perm,
                   const std::unordered_map<const Node*, int>& uses, size_t& created) {
  const size_t r = perm.size();
  std::swap(perm[r - 2], perm[r - 1]);
  bool identity = true;
  for (size_t i = 0; i < r; ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  Node* x = t->inputs[0];
  if (identity) return x;
  if (perm[r - 1] != static_cast<int64_t>(r - 1)) return nullptr;
  for (Node* n : g->nodes) {
    if (n == at) break;
    if (n != t && n->inputs.size() == 1 && n->inputs[0] == x && layout_permutation(n) == perm)
      return n;
  }
  const auto it = uses.find(t);
  if (it == uses.end() || it->second != 1) return nullptr;
  sem::Attrs attrs;
  attrs.set("axes", perm);
  Node* q = m.add_apply(g, sem::Registry::instance().find("permute"), {x}, std::move(attrs),
                        nullptr, t->loc);
  g->nodes.pop_back();
  g->nodes.insert(std::find(g->nodes.begin(), g->nodes.end(), at), q);
  ++created;
  return q;
}

// A permute t by p of a product C = op(A) op(B) that nothing else reads, where p moves the
// product's last axis and p', p with the values r-2 and r-1 exchanged, keeps it: C becomes
// C^T = op(B)^T op(A)^T (its operands exchanged, each flag toggled) and t permutes C^T by p',
// a copy of contiguous runs (the backward's keys' gradient, q^T dS laid back out as heads:
// [0,3,1,2] of [8,4,64,128] becomes [0,2,1,3] of dS^T q). Whether it did.
bool transpose_product(Node* t, const std::unordered_map<const Node*, int>& uses) {
  const std::optional<std::vector<int64_t>> perm = layout_permutation(t);
  if (!perm) return false;
  Node* c = t->inputs[0];
  if (!c->is_apply() || !c->is_prim("matmul") || c->inputs.size() != 2 || c->graph != t->graph)
    return false;
  for (const Node* in : c->inputs)
    if (!in->type || !in->type->is_tensor() || in->type->rank() < 2) return false;
  // A batch times one matrix runs as one GEMM over the stacked rows (backends/cpu/matmul.cpp);
  // exchanged, it would run one GEMM per batch entry.
  const sem::MatmulFlags f = sem::matmul_flags(c->attrs);
  if (!f.a && c->inputs[0]->type->rank() > 2 && c->inputs[1]->type->rank() == 2) return false;
  const auto it = uses.find(c);
  if (it == uses.end() || it->second != 1) return false;
  const int64_t r = static_cast<int64_t>(perm->size());
  std::vector<int64_t> swapped = *perm;
  for (int64_t& a : swapped) a = a == r - 2 ? r - 1 : a == r - 1 ? r - 2 : a;
  if ((*perm)[r - 1] == r - 1 || swapped[r - 1] != r - 1) return false;
  sem::Attrs attrs;  // the flags written only where set, as reverse mode writes them
  for (const auto& [name, value] : c->attrs.items())
    if (name != "transpose_a" && name != "transpose_b") attrs.set(name, value);
  if (!f.b) attrs.set("transpose_a", true);
  if (!f.a) attrs.set("transpose_b", true);
  const sem::TypeP type = c->prim->infer({c->inputs[1]->type, c->inputs[0]->type}, attrs);
  if (!type) return false;
  std::swap(c->inputs[0], c->inputs[1]);
  c->attrs = std::move(attrs);
  c->type = type;
  t->attrs.set("axes", swapped);
  return true;
}

}  // namespace

size_t fold_transposes_into_products(Module& m) {
  size_t folded = 0, created = 0;
  std::unordered_map<const Node*, int> uses = use_counts(m);
  for (const auto& g : m.graphs()) {
    if (is_fused_graph(*g)) continue;
    std::vector<Node*> products;
    for (Node* n : g->nodes)
      if (n->is_apply() && n->is_prim("matmul") && n->inputs.size() == 2) products.push_back(n);
    for (Node* n : products) {
      for (size_t i = 0; i < 2; ++i) {
        // Through a chain of layout changes (the backward transposes an operand the forward
        // transposed): each step drops one or stops.
        while (const std::optional<std::vector<int64_t>> perm = layout_permutation(n->inputs[i])) {
          Node* t = n->inputs[i];
          Node* operand = flag_operand(m, g.get(), n, t, *perm, uses, created);
          if (!operand) break;
          const char* flag = i == 0 ? "transpose_a" : "transpose_b";
          const bool was = n->attrs.has(flag) && n->attrs.get_bool(flag);
          n->inputs[i] = operand;
          n->attrs.set(flag, !was);
          --uses[t];
          ++uses[operand];
          ++folded;
        }
      }
    }
    for (Node* t : g->nodes) folded += transpose_product(t, uses);
  }
  if (created > 0) eliminate_common_subexpressions(m);  // a new permute the backward also makes
  if (folded > 0) eliminate_dead_code(m);
  return folded;
}

FusionStats fuse_operators(Module& m, const FusionOptions& options) {
  FusionStats stats;
  if (options.fold_transposes) stats.folded_transposes = fold_transposes_into_products(m);
  Effects effects(m);
  const auto cross = cross_graph_uses(m);
  std::vector<Graph*> graphs;
  for (const auto& g : m.graphs())
    if (!is_fused_graph(*g)) graphs.push_back(g.get());
  for (Graph* g : graphs) GraphFusion(m, g, effects, cross, options, stats).run();
  return stats;
}

}  // namespace spora::passes
