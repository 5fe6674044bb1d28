// Eager-mode memory of the lowering: which nodes of the entry graph are still needed at a
// statement boundary (lowerer.h, "eager-mode memory"; semantics/eager.h).
//
// Mark and sweep, at the end of each statement of the innermost block, when the lowering is
// emitting into the entry graph and no derivative region is being recorded (autodiff reads a
// region by position in the node list and replays it):
//   1. Roots: every binding of every frame's environment, followed through tuples, records
//      (and their constructor arguments), closures (their captured environment), bound
//      methods, transforms and pullbacks. A pullback also keeps its tape: the recorded nodes
//      stay applies (autodiff walks them) and their inputs stay.
//   2. Temporaries: for each outer frame, the nodes its statement in progress made before
//      the inner frame started: made since the statement started and before its first nested
//      block of the same environment, or after its latest one. They stay applies too (a
//      derivative being checked may still walk them).
//   3. Nested graphs of the entry graph (a for_each the eager path could not unroll) keep
//      every entry node they read.
//   4. Kept applies keep their inputs, and so does a live apply whose value a constant cannot
//      hold as its type says (then it stays an apply), transitively.
//   5. EagerExecutor::collect drops the rest and freezes the other live applies into
//      constants.
#include <algorithm>
#include <unordered_set>

#include "semantics/lower/lowerer.h"

namespace spora::sem::lower {

Lowerer::EagerBlock::EagerBlock(Lowerer& lowerer, const Env& env) : L_(lowerer) {
  if (!L_.eager_ || !L_.executor_) return;
  active_ = true;
  const uint64_t now = L_.executor_->clock();
  if (!L_.eager_frames_.empty()) {
    EagerFrame& parent = L_.eager_frames_.back();
    if (parent.env == &env) {
      nested_block_ = true;
      parent.first_block = std::min(parent.first_block, now);
    }
  }
  EagerFrame f;
  f.env = &env;
  f.entry = f.stmt_start = now;
  L_.eager_frames_.push_back(f);
}

Lowerer::EagerBlock::~EagerBlock() {
  if (!active_) return;
  L_.eager_frames_.pop_back();
  if (nested_block_ && !L_.eager_frames_.empty()) L_.eager_frames_.back().last_block_exit = L_.executor_->clock();
}

void Lowerer::EagerBlock::statement_start() {
  if (!active_) return;
  EagerFrame& f = L_.eager_frames_.back();
  f.stmt_start = L_.executor_->clock();
  f.first_block = f.last_block_exit = UINT64_MAX;
}

void Lowerer::EagerBlock::statement_end() {
  if (!active_ || !L_.eager_ || L_.ad_inline_ || !module_entry_is_current()) return;
  if (L_.executor_->clock() == L_.eager_collected_at_) return;  // nothing ran since
  L_.eager_collect();
  L_.eager_collected_at_ = L_.executor_->clock();
}

bool Lowerer::EagerBlock::module_entry_is_current() const { return L_.graph_ && L_.graph_ == L_.module_.entry; }

void Lowerer::eager_collect() {
  const ir::Graph* entry = module_.entry;
  std::unordered_set<const ir::Node*> live, keep;
  auto mark = [&](const ir::Node* n) {
    if (n && n->graph == entry) live.insert(n);
  };

  // 1. Roots, iteratively (values can be deep and shared).
  std::unordered_set<const AVal*> seen;
  std::unordered_set<const Env*> seen_env;
  std::vector<const AVal*> todo;
  auto push = [&](const AV& v) {
    if (v && seen.insert(v.get()).second) todo.push_back(v.get());
  };
  auto push_env = [&](const Env* e) {
    if (!e || !seen_env.insert(e).second) return;
    for (const auto& scope : e->scopes)
      for (const auto& [name, b] : scope) push(b.value);
  };
  for (const EagerFrame& f : eager_frames_) push_env(f.env);
  std::vector<ir::Node*> region, others;
  std::vector<AV> values;
  while (!todo.empty()) {
    const AVal* a = todo.back();
    todo.pop_back();
    mark(a->node);
    for (const AV& e : a->elems) push(e);
    for (const auto& st : a->statics) push(st.second);
    push(a->self);
    push_env(a->env.get());
    if (a->kind == AK::Pullback) {
      region.clear();
      others.clear();
      values.clear();
      pullback_nodes(*a, region, others, values);
      for (ir::Node* n : region) {
        mark(n);
        if (n->graph == entry) keep.insert(n);
      }
      for (ir::Node* n : others) mark(n);
      for (const AV& v : values) push(v);
    }
  }

  // 2. Temporaries of the statements in progress in the outer frames.
  struct Span {
    uint64_t lo, hi;
  };
  std::vector<Span> spans;
  for (size_t j = 0; j + 1 < eager_frames_.size(); ++j) {
    const EagerFrame& f = eager_frames_[j];
    const uint64_t child = eager_frames_[j + 1].entry;
    spans.push_back({f.stmt_start, std::min(f.first_block, child)});
    if (f.last_block_exit != UINT64_MAX) spans.push_back({f.last_block_exit, child});
  }
  if (!spans.empty()) {
    for (const ir::Node* n : entry->nodes) {
      const uint64_t s = executor_->seq(n);
      for (const Span& sp : spans) {
        if (s >= sp.lo && s < sp.hi) {
          live.insert(n);
          keep.insert(n);
          break;
        }
      }
    }
  }

  // 3. Nested graphs of the entry graph read entry nodes while they run.
  for (const ir::Graph* c : module_.children(entry))
    for (const ir::Node* x : ir::free_variables(c)) mark(x);

  // 4. A kept apply keeps its inputs. So does a live apply whose value a constant cannot hold
  // faithfully (the verifier compares a constant's value with its type: an iterator inside a
  // tuple, a dynamic dim): it stays an apply.
  auto freezable = [&](const ir::Node* n) {
    const Value* v = executor_->value(n);
    if (!v) return false;
    if (v->kind == Value::Kind::None || v->kind == Value::Kind::Opaque) return true;
    return same_type(v->type(), n->type);
  };
  std::vector<const ir::Node*> work(keep.begin(), keep.end());
  for (const ir::Node* n : entry->nodes)
    if (n->is_apply() && live.count(n) && !keep.count(n) && !freezable(n)) {
      keep.insert(n);
      work.push_back(n);
    }
  while (!work.empty()) {
    const ir::Node* n = work.back();
    work.pop_back();
    for (const ir::Node* x : n->inputs) {
      if (!x || x->graph != entry) continue;
      live.insert(x);
      if (x->is_apply() && !keep.count(x) && !freezable(x)) {
        keep.insert(x);
        work.push_back(x);
      }
    }
  }

  // 5. Sweep.
  executor_->collect(live, keep);
}

}  // namespace spora::sem::lower
