// Test data and the direct computation every collective run is checked against.
//
// fill_input gives every (rank, element) a value chosen so that each reduction is exact in
// every dtype and in any order -- small integers for sum, max and min; mostly +-1 with a few
// 2s for prod -- so results can be compared element by element with ==, whatever order an
// algorithm combined them in. Non-reducing collectives get values that differ per rank and
// element, so a block delivered to the wrong place is caught.
//
// count_wrong recomputes rank's expected output straight from the definition (regenerating
// every rank's input from the formula, no communication) and counts the elements that differ.
// Used by the tests, `spora coll` (the "#wrong" column) and the benchmarks.
#pragma once

#include <cstdint>

#include "backends/comm/communicator.h"
#include "parallel/collectives/schedule.h"

namespace spora::comm {

// `input` is host memory of spec-defined size (Schedule::input_count) for `rank`.
void fill_input(const parallel::CollectiveSpec& spec, int rank, DType t, void* input);

// `output` is host memory holding rank's result; returns how many elements are wrong.
std::int64_t count_wrong(const parallel::CollectiveSpec& spec, int rank, DType t,
                         const void* output);

// Element counts of rank's buffers, as in the table of parallel/collectives/schedule.h.
std::int64_t input_count(const parallel::CollectiveSpec& spec, int rank);
std::int64_t output_count(const parallel::CollectiveSpec& spec, int rank);

}  // namespace spora::comm
