// The fusion kind of a primitive: the "fusion" facet of its registry row.
// The fusion pass (fusion.h) is one algorithm over this ordered
// lattice (TVM's OpPatternKind):
//
//   Elementwise < Broadcast < Injective < Reduction < OutputFusable < Opaque
//
//   Elementwise    out[i] = f(x[i], ...) with every operand of the output's shape (exp, relu,
//                  cast, a same-shape add)
//   Broadcast      elementwise after NumPy broadcasting of the operands (add, where, compare,
//                  broadcast_to)
//   Injective      every output element is one input element at some index (reshape, permute,
//                  one_hot)
//   Reduction      combines elements along axes (sum, max, mean; softmax, layer_norm and
//                  cross_entropy are row reductions with an elementwise prologue/epilogue)
//   OutputFusable  a library kernel whose output can take an elementwise epilogue (matmul,
//                  conv2d: the GEMM stays in BLAS, bias + activation run fused on its output)
//   Opaque         never fused (control flow, random, I/O, gather, pooling, tuples)
//
// ops/ sets the facet on each row: `p.facets[passes::kFusionFacet] = passes::FusionKind::X`,
// or a FusionKindRule when the kind depends on the attributes (batch_norm: Broadcast at
// inference, Opaque in training). A row without the facet is Opaque.
#pragma once

#include <functional>

#include "semantics/registry.h"

namespace spora::passes {

enum class FusionKind { Elementwise, Broadcast, Injective, Reduction, OutputFusable, Opaque };

inline constexpr const char* kFusionFacet = "fusion";

// A kind that depends on a node's attributes.
using FusionKindRule = std::function<FusionKind(const sem::Attrs&)>;

// The kind of prim applied with attrs (Opaque when the row has no facet).
inline FusionKind fusion_kind(const sem::Primitive& prim, const sem::Attrs& attrs = {}) {
  if (const auto* k = prim.facet<FusionKind>(kFusionFacet)) return *k;
  if (const auto* rule = prim.facet<FusionKindRule>(kFusionFacet)) return (*rule)(attrs);
  return FusionKind::Opaque;
}

inline const char* fusion_kind_name(FusionKind k) {
  switch (k) {
    case FusionKind::Elementwise:
      return "elementwise";
    case FusionKind::Broadcast:
      return "broadcast";
    case FusionKind::Injective:
      return "injective";
    case FusionKind::Reduction:
      return "reduction";
    case FusionKind::OutputFusable:
      return "output-fusable";
    case FusionKind::Opaque:
      return "opaque";
  }
  return "opaque";
}

}  // namespace spora::passes
