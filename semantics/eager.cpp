#include "semantics/eager.h"

#include "semantics/interpreter.h"
#include "semantics/registry.h"

namespace spora::sem {

EagerExecutor::EagerExecutor(ir::Module& m, ir::Graph* graph) : m_(m), graph_(graph) {
  m_.on_add = [this](ir::Node* n) { run(n); };
}

EagerExecutor::~EagerExecutor() { m_.on_add = nullptr; }

const Value* EagerExecutor::value(const ir::Node* n) const {
  auto it = values_.find(n);
  return it == values_.end() ? nullptr : &it->second;
}

void EagerExecutor::run(ir::Node* n) {
  if (n->graph != graph_) return;
  if (n->is_constant()) {
    if (n->graph_value) {
      Value v;
      v.kind = Value::Kind::Opaque;
      v.opaque = std::make_shared<GraphRef>(n->graph_value);
      values_[n] = v;
    } else {
      values_[n] = n->value;
    }
    return;
  }
  std::vector<Value> args;
  args.reserve(n->inputs.size());
  for (const ir::Node* x : n->inputs) {
    auto it = values_.find(x);
    if (it == values_.end())
      throw lang::InternalError("eager: input of %" + (n->prim ? n->prim->name : n->callee->name) +
                                " has not run");
    args.push_back(it->second);
  }
  try {
    if (n->callee) {
      Interpreter interp(m_);
      values_[n] = interp.call(n->callee, std::move(args));
    } else if (n->prim->eval) {
      values_[n] = kernel_for(*n->prim)(args, n->attrs);
    } else {
      throw lang::InternalError("eager: control flow '" + n->prim->name + "' in eager mode");
    }
  } catch (const RuntimeError&) {
    throw;
  } catch (const lang::UserError& e) {
    throw RuntimeError(e.what(), n->loc);
  }
}

}  // namespace spora::sem
