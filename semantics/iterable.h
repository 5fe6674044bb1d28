// A run-time sequence that `for_each(%iter, @body, ...)` walks (datasets, Python-like ranges
// of tuples, test fixtures). It is carried in a Value of kind Opaque; the interpreter
// dynamic_casts the Opaque to Iterable.
//
// Protocol: the interpreter calls reset() once before the loop, then next(out) until it returns
// false; every true return has stored one element (of the iterator type's element type) in out.
// An Iterable may be walked again (an epoch loop re-runs for_each on the same value), so
// reset() must rewind it. Errors that are the user's fault (a missing data file) are
// lang::UserError; the interpreter attaches the for_each node's location.
//
// Parts. Shapes are static, so a sequence whose elements do not all have one type (a dataset
// whose last batch is partial: f32[64,784] batches, then one f32[32,784]) lists its element
// types in its Iterator type (Type::elems, in order of appearance) and is walked in runs of one
// type, the *parts*: part k holds the elements of type elems[k], and the parts follow each other
// in order. The lowering emits one `for_each` per part on the same iterator, with attribute
// `part=k` (absent = 0), each carrying the loop state of the one before:
//
//   %s1 = for_each(%it, @body.full, %s0, part=0)      # reset(), then the full batches
//   %s2 = for_each(%it, @body.last, %s1..., part=1)   # continues where part 0 stopped
//
// The interpreter resets only for part 0 and calls next_in(part, out), which returns false at
// the end of the sequence and also when the next element belongs to another part (without
// consuming it). Eager mode, which lowers the body once per element anyway, calls next().
#pragma once

#include "semantics/value.h"

namespace spora::sem {

struct Iterable : Opaque {
  virtual void reset() = 0;
  virtual bool next(Value& out) = 0;
  // The next element if it belongs to `part`; false at the end or when it belongs to another
  // part (then it is not consumed). Single-part iterables need not override this.
  virtual bool next_in(int64_t part, Value& out) { return part == 0 && next(out); }
};

}  // namespace spora::sem
