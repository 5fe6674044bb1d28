// A run-time sequence that `for_each(%iter, @body, ...)` walks (datasets, Python-like ranges
// of tuples, test fixtures). It is carried in a Value of kind Opaque; the interpreter
// dynamic_casts the Opaque to Iterable.
//
// Protocol: the interpreter calls reset() once before the loop, then next(out) until it returns
// false; every true return has stored one element (of the iterator type's element type) in out.
// An Iterable may be walked again (an epoch loop re-runs for_each on the same value), so
// reset() must rewind it. Errors that are the user's fault (a missing data file) are
// lang::UserError; the interpreter attaches the for_each node's location.
#pragma once

#include "semantics/value.h"

namespace spora::sem {

struct Iterable : Opaque {
  virtual void reset() = 0;
  virtual bool next(Value& out) = 0;
};

}  // namespace spora::sem
