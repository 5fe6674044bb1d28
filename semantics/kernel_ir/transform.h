// Transformations of the kernel IR (kernel_ir.h) that a target printer asks for: they change
// how the loops run, never what a kernel computes.
#pragma once

#include <cstdint>
#include <optional>

#include "semantics/kernel_ir/kernel_ir.h"

namespace spora::kir {

// Splits the inner loop of a splittable kernel into tiles of `tile` iterations (a task each
// for the printer: rows x ceil(inner / tile) tasks). 0: whole rows.
void tile_inner(Kernel& k, int64_t tile);

// The inner iterations of one task: the tile, else the whole row.
int64_t task_extent(const Kernel& k);

// Interleaves the inner loop of pass p `ways` ways: each task's iterations are cut into `ways`
// equal parts run side by side, statement k of every part before statement k + 1 of any, so
// independent dependency chains sit next to each other (the remainder runs the plain body).
// Fills p.loop.interleaved with the inner setup and the body once per copy, copy c renaming
// the body's values and the inner loop's variables (Var::copy, Operand::copy); values of the
// row are shared. Requires a single loop over j (no inner_nest) and no accumulators in it.
void interleave(Kernel& k, Pass& p, int ways);

// Does the body of p call a transcendental function (exp, log, tanh, erf, sigmoid, gelu)?
bool calls_transcendental(const Pass& p);

}  // namespace spora::kir
