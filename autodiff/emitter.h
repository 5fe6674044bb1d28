// The Emitter of autodiff/rules.h for IR graphs, and structured (tuple/record) adjoints.
#pragma once

#include "autodiff/rules.h"

namespace spora::autodiff {

// Appends nodes to a graph of a module, running each primitive's shape rule.
class GraphEmitter : public Emitter {
 public:
  GraphEmitter(ir::Module& m, ir::Graph* g, lang::SourceLoc loc = {}) : m_(m), g_(g), loc_(loc) {}
  Node* op(const std::string& prim, std::vector<Node*> inputs, Attrs attrs = {}) override;
  Node* scalar(double value, DType dtype) override;
  bool runs_at_once() const override { return static_cast<bool>(m_.on_add); }  // eager mode
  ir::Module& module() { return m_; }
  ir::Graph* graph() { return g_; }

 private:
  ir::Module& m_;
  ir::Graph* g_;
  lang::SourceLoc loc_;
};

// A value that may be zero (no node) and, for tuples and records, may be kept per element
// (parts), so that adjoints of structured values never need to be packed and unpacked.
struct SVal {
  Node* node = nullptr;
  std::vector<SVal> parts;
  bool zero() const;
};

// Zeros of any type (tensors, tuples, records).
Node* zeros_of(Emitter& e, const sem::TypeP& type);
// The node for v with type `type` (zeros where v has none).
Node* materialise(Emitter& e, const SVal& v, const sem::TypeP& type);
// v + w (either may be zero), keeping structure.
SVal add_svals(Emitter& e, const SVal& v, const SVal& w, const sem::TypeP& type);
// Do values of this type carry gradients (a float tensor, or a tuple/record containing one)?
bool differentiable_type(const sem::TypeP& type);
// Do values of this type carry adjoints in reverse mode: differentiable types, and the tape
// lists of reverse-differentiated loops (read by their backward pass; their adjoint is a
// sparse list, ops/tape.cpp).
bool adjoint_type(const sem::TypeP& type);
// Do values of this type carry tangents in forward mode: differentiable types, and the tape
// lists of reverse-differentiated loops (their tangent is a parallel list of tangents).
bool tangent_type(const sem::TypeP& type);

}  // namespace spora::autodiff
