// Layouts applied to data, all ranks in one process (the reference for the partitioner's tests).
#include "parallel/layout/shard_data.h"

#include <fmt/format.h>

#include "lang/diagnostics.h"

namespace spora::parallel {

using lang::InternalError;
using lang::UserError;
using sem::Tensor;

namespace {

// Calls f(outer_flat, block_flat, run) for every contiguous run of the block `shape` at
// `offset` within a tensor of shape `outer`, in the block's row-major order: `run` elements
// that are consecutive in both. Trailing dimensions the block spans whole merge into one run.
template <class F>
void for_block_runs(const std::vector<int64_t>& outer, const std::vector<int64_t>& offset,
                    const std::vector<int64_t>& shape, F f) {
  const size_t r = shape.size();
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (n == 0) return;
  // Dimensions [k, r) form one run: each after the first one spanned whole.
  size_t k = r;
  int64_t run = 1;
  while (k > 0) {
    run *= shape[k - 1];
    --k;
    if (shape[k] != outer[k]) break;
  }
  std::vector<int64_t> ostride(r, 1);
  for (size_t d = r; d-- > 1;) ostride[d - 1] = ostride[d] * outer[d];
  int64_t base = 0;
  for (size_t d = 0; d < r; ++d) base += offset[d] * ostride[d];
  std::vector<int64_t> idx(k, 0);
  for (int64_t i = 0; i < n; i += run) {
    int64_t src = base;
    for (size_t d = 0; d < k; ++d) src += idx[d] * ostride[d];
    f(src, i, run);
    for (size_t d = k; d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

void check_block(const std::vector<int64_t>& outer, const std::vector<int64_t>& offset,
                 const std::vector<int64_t>& shape) {
  if (outer.size() != offset.size() || outer.size() != shape.size())
    throw InternalError("block rank does not match the tensor's");
  for (size_t d = 0; d < outer.size(); ++d)
    if (offset[d] < 0 || shape[d] < 0 || offset[d] + shape[d] > outer[d])
      throw InternalError(fmt::format("block at {} of shape {} is outside the tensor {}",
                                      sem::shape_str(offset), sem::shape_str(shape),
                                      sem::shape_str(outer)));
}

void copy_run(const Tensor& src, int64_t si, Tensor& dst, int64_t di, int64_t n) {
  const int64_t b = static_cast<int64_t>(dtype_size(src.dtype()));
  std::memcpy(static_cast<uint8_t*>(dst.raw()) + di * b,
              static_cast<const uint8_t*>(src.raw()) + si * b, static_cast<size_t>(n * b));
}

}  // namespace

// A tensor on a device (a GPU rank's values) is read through its host copy; blocks are made
// on the host, where the device backend's kernels take them as inputs.
Tensor slice_block(const Tensor& t, const std::vector<int64_t>& offset,
                   const std::vector<int64_t>& shape) {
  check_block(t.shape(), offset, shape);
  const Tensor h = sem::host_tensor(t);
  Tensor out = Tensor::empty(t.dtype(), shape);
  for_block_runs(t.shape(), offset, shape,
                 [&](int64_t s, int64_t d, int64_t n) { copy_run(h, s, out, d, n); });
  return out;
}

void write_block(Tensor& t, const Tensor& block, const std::vector<int64_t>& offset) {
  check_block(t.shape(), offset, block.shape());
  if (block.dtype() != t.dtype()) throw InternalError("write_block: dtypes differ");
  if (!t.device().is_cpu()) throw InternalError("write_block: the destination is not on the host");
  const Tensor b = sem::host_tensor(block);
  for_block_runs(t.shape(), offset, block.shape(),
                 [&](int64_t s, int64_t d, int64_t n) { copy_run(b, d, t, s, n); });
}

Tensor concat_tensors(const std::vector<Tensor>& parts, int dim) {
  if (parts.empty()) throw InternalError("concat_tensors of nothing");
  std::vector<int64_t> shape = parts[0].shape();
  shape.at(static_cast<size_t>(dim)) = 0;
  for (const Tensor& p : parts)
    shape[static_cast<size_t>(dim)] += p.shape()[static_cast<size_t>(dim)];
  Tensor out = Tensor::empty(parts[0].dtype(), shape);
  std::vector<int64_t> off(shape.size(), 0);
  for (const Tensor& p : parts) {
    write_block(out, p, off);
    off[static_cast<size_t>(dim)] += p.shape()[static_cast<size_t>(dim)];
  }
  return out;
}

Tensor add_tensors(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    throw InternalError(
        fmt::format("add_tensors: {} and {} differ", a.type()->str(), b.type()->str()));
  Tensor out = Tensor::empty(a.dtype(), a.shape());
  if (a.dtype() == DType::boolean) {
    for (int64_t i = 0; i < a.numel(); ++i) out.set(i, (a.get(i) != 0 || b.get(i) != 0) ? 1 : 0);
  } else {
    for (int64_t i = 0; i < a.numel(); ++i) out.set(i, a.get(i) + b.get(i));
  }
  return out;
}

std::vector<Tensor> shard(const Tensor& global, const Layout& l, const Mesh& m) {
  l.validate(m);
  const std::vector<int64_t> local = l.local_shape(global.shape(), m);
  std::vector<Tensor> out;
  for (int64_t r = 0; r < m.size(); ++r) {
    const std::vector<int64_t> c = m.coords(r);
    bool holder = true;
    for (int a : l.partial) holder = holder && c[static_cast<size_t>(a)] == 0;
    out.push_back(holder ? slice_block(global, l.shard_offset(global.shape(), m, r), local)
                         : Tensor::zeros(global.dtype(), local));
  }
  return out;
}

Tensor unshard(const std::vector<Tensor>& locals, const Layout& l, const Mesh& m) {
  l.validate(m);
  if (static_cast<int64_t>(locals.size()) != m.size())
    throw UserError(fmt::format("{} local tensors for the mesh {} of {} ranks", locals.size(),
                                m.to_string(), m.size()));
  std::vector<int64_t> global = locals[0].shape();
  if (static_cast<int>(global.size()) != l.rank())
    throw UserError(
        fmt::format("a local tensor of rank {} for layout {}", global.size(), l.to_string()));
  for (size_t d = 0; d < global.size(); ++d) global[d] *= l.pieces(static_cast<int>(d), m);
  Tensor out = Tensor::zeros(locals[0].dtype(), global);
  for (int64_t r = 0; r < m.size(); ++r) {
    const std::vector<int64_t> c = m.coords(r);
    // Replicas are read once: only coordinate 0 along each axis that neither splits nor is
    // partial.
    bool read = true;
    for (int a = 0; a < m.ndim(); ++a)
      if (l.dim_of_axis(a) < 0 && !l.has_partial(a) && c[static_cast<size_t>(a)] != 0) read = false;
    if (!read) continue;
    const Tensor& t = locals[static_cast<size_t>(r)];
    if (t.shape() != locals[0].shape())
      throw UserError(fmt::format("rank {} holds {} but rank 0 holds {}", r, t.type()->str(),
                                  locals[0].type()->str()));
    const std::vector<int64_t> off = l.shard_offset(global, m, r);
    if (l.partial.empty()) {
      write_block(out, t, off);
    } else {
      write_block(out, add_tensors(slice_block(out, off, t.shape()), t), off);
    }
  }
  return out;
}

std::vector<Tensor> run_step(const std::vector<Tensor>& locals, const Layout& l,
                             const RedistStep& s, const Mesh& m) {
  (void)apply_step(l, s);  // checks the step applies to l (InternalError otherwise)
  const int64_t p = m.axis_size(s.axis);
  std::vector<Tensor> out(locals.size());
  for (int64_t r = 0; r < m.size(); ++r) {
    const std::vector<int64_t> c = m.coords(r);
    const int64_t me = c[static_cast<size_t>(s.axis)];
    const std::vector<int64_t> grp = m.group(r, {s.axis});  // ordered by the axis coordinate
    const Tensor& mine = locals[static_cast<size_t>(r)];
    const size_t dim = static_cast<size_t>(s.dim);
    switch (s.kind) {
      case RedistStep::Kind::AllGather: {
        std::vector<Tensor> parts;
        for (int64_t g : grp) parts.push_back(locals[static_cast<size_t>(g)]);
        out[static_cast<size_t>(r)] = concat_tensors(parts, s.dim);
        break;
      }
      case RedistStep::Kind::Slice: {
        std::vector<int64_t> shape = mine.shape(), off(shape.size(), 0);
        shape[dim] /= p;
        off[dim] = me * shape[dim];
        out[static_cast<size_t>(r)] = slice_block(mine, off, shape);
        break;
      }
      case RedistStep::Kind::AllReduce:
      case RedistStep::Kind::ReduceScatter: {
        Tensor sum = locals[static_cast<size_t>(grp[0])].clone();
        for (size_t i = 1; i < grp.size(); ++i)
          sum = add_tensors(sum, locals[static_cast<size_t>(grp[i])]);
        if (s.kind == RedistStep::Kind::AllReduce) {
          out[static_cast<size_t>(r)] = sum;
        } else {
          std::vector<int64_t> shape = sum.shape(), off(shape.size(), 0);
          shape[dim] /= p;
          off[dim] = me * shape[dim];
          out[static_cast<size_t>(r)] = slice_block(sum, off, shape);
        }
        break;
      }
      case RedistStep::Kind::AllToAll: {
        // Every member cuts its block along dim2 into p pieces and sends piece j to member j;
        // the received pieces are concatenated along dim in member order.
        const size_t dim2 = static_cast<size_t>(s.dim2);
        std::vector<Tensor> parts;
        for (int64_t g : grp) {
          const Tensor& src = locals[static_cast<size_t>(g)];
          std::vector<int64_t> shape = src.shape(), off(shape.size(), 0);
          shape[dim2] /= p;
          off[dim2] = me * shape[dim2];
          parts.push_back(slice_block(src, off, shape));
        }
        out[static_cast<size_t>(r)] = concat_tensors(parts, s.dim);
        break;
      }
    }
  }
  return out;
}

std::vector<Tensor> run_plan(const std::vector<Tensor>& locals, const Layout& from,
                             const RedistPlan& plan, const Mesh& m) {
  std::vector<Tensor> cur = locals;
  Layout l = from;
  for (const RedistStep& s : plan.steps) {
    cur = run_step(cur, l, s, m);
    l = apply_step(l, s);
  }
  return cur;
}

}  // namespace spora::parallel
