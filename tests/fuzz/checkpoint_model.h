// The model whose checkpoints fuzz_checkpoint reads and fuzz_seeds writes:
// MLP{l1: Dense{w: f32[4,5], b: f32[5]}, l2: Dense{w: f32[5,3], b: f32[3]}}.
#pragma once

#include "semantics/value.h"

namespace spora::fuzz {

inline sem::Value checkpoint_dense(int64_t in, int64_t out) {
  using sem::Type;
  auto type = Type::record("Dense", {"w", "b"},
                           {Type::tensor(DType::f32, {in, out}), Type::tensor(DType::f32, {out})});
  sem::Tensor w = sem::Tensor::empty(DType::f32, {in, out}),
              b = sem::Tensor::empty(DType::f32, {out});
  for (int64_t i = 0; i < w.numel(); ++i) w.set(i, 0.25 * static_cast<double>(i));
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, -0.5 * static_cast<double>(i));
  return sem::Value::record(type, {sem::Value(w), sem::Value(b)});
}

inline sem::Value checkpoint_model() {
  sem::Value l1 = checkpoint_dense(4, 5), l2 = checkpoint_dense(5, 3);
  return sem::Value::record(sem::Type::record("MLP", {"l1", "l2"}, {l1.type(), l2.type()}),
                            {l1, l2});
}

}  // namespace spora::fuzz
