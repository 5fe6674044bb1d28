// The simplification pipeline: what `spora ir --stage optimized` shows
// and what runs before execution. It reads as a list:
//
//   inline          inline_calls                       inline.h
//   fold-tuples     fold_tuples                        fold_tuples.h
//   fold-constants  fold_constants                     constant_fold.h
//   simplify        simplify_algebra                   simplify.h
//   hoist           hoist_loop_products                hoist.h
//   stack           stack_loop_products                stack_products.h
//   cse             eliminate_common_subexpressions    cse.h
//   dce             eliminate_dead_code                dce.h
//
// optimize runs the list in rounds until a round changes nothing (a fixed point), at most
// kMaxRounds rounds. Each pass feeds the next: inlining exposes tuple packing to fold_tuples,
// folded tuples expose constants, constants feed the algebraic rules, products and sums of
// products leave loop bodies, the rules and the hoisting make duplicates for CSE, and DCE sweeps
// what they all left unused.
//
//   - verify: the verifier runs on the input and after every pass;
//     a failure throws lang::InternalError "IR verification failed after <pass> ...".
//   - print_after: pass names (or "all"); the module is printed after each such pass, to
//     `dump` (std::cerr when null), under a line `# after <pass> (round N)`, in the first
//     round and in later rounds when the pass changed something. An unknown name is a
//     lang::UserError that lists the names.
//   - SPORA_DEBUG_PASSES=1 in the environment prints to stderr, for every pass, its round and
//     the node and graph counts before -> after; =2 also every algebraic rule that fires.
//
// Guarantees what every pass does: the module verifies and computes the same values with the
// same effects (up to the floating-point licences of simplify.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "semantics/ir/ir.h"

namespace spora::passes {

struct PassOptions {
  std::vector<std::string> print_after;
  bool verify = true;
  std::ostream* dump = nullptr;
};

constexpr int kMaxRounds = 8;

void optimize(ir::Module& m, const PassOptions& options = {});

// The pass names, in pipeline order.
const std::vector<std::string>& pass_names();

}  // namespace spora::passes
