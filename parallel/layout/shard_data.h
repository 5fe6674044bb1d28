// Layouts applied to actual data: every rank's local tensor simulated in one process. The
// reference the partitioner's and the runtime's tests compare against (a sharded run must equal
// unshard(the ranks' results)), and the executable meaning of a RedistPlan.
#pragma once

#include <cstdint>
#include <vector>

#include "parallel/layout/layout.h"
#include "semantics/value.h"

namespace spora::parallel {

// Every rank's local tensor of `global` under layout `l` (index = rank). Partial axes: the
// rank at coordinate 0 along every partial axis holds the shard, the others zeros (so the sum
// over the axis is the value).
std::vector<sem::Tensor> shard(const sem::Tensor& global, const Layout& l, const Mesh& m);
// The global tensor from every rank's local tensor: split dims concatenated, partial axes
// summed, replicas read once (from coordinate 0 of each replicating axis). Throws
// lang::UserError on a local shape that does not fit the layout.
sem::Tensor unshard(const std::vector<sem::Tensor>& locals, const Layout& l, const Mesh& m);
// Runs one redistribution step on every rank's local tensor (the collectives done in memory):
// `locals` have layout `l`, the result has apply_step(l, s).
std::vector<sem::Tensor> run_step(const std::vector<sem::Tensor>& locals, const Layout& l,
                                  const RedistStep& s, const Mesh& m);
// Runs every step of a plan.
std::vector<sem::Tensor> run_plan(const std::vector<sem::Tensor>& locals, const Layout& from,
                                  const RedistPlan& plan, const Mesh& m);

// Tensor helpers (row-major, any dtype): the block of `t` starting at `offset` of `shape`; `t`
// with `block` written at `offset`; concatenation along `dim`; the element-wise sum.
sem::Tensor slice_block(const sem::Tensor& t, const std::vector<int64_t>& offset,
                        const std::vector<int64_t>& shape);
void write_block(sem::Tensor& t, const sem::Tensor& block, const std::vector<int64_t>& offset);
sem::Tensor concat_tensors(const std::vector<sem::Tensor>& parts, int dim);
sem::Tensor add_tensors(const sem::Tensor& a, const sem::Tensor& b);

}  // namespace spora::parallel
