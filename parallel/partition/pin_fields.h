// pin_record_fields: a strategy's parameter layouts, written into a whole program. A strategy
// names parameters by path ("net.l1.w": field w of field l1 of the model the loss takes as
// `net`); a program builds its model, its gradients and its optimizer state as records, and
// the lowering and the passes explode records into their tensors (loop state, arguments).
// So before the passes, every field input of every record a program builds whose path matches
// a named layout is wrapped in shard_hint(x, layout=...) (ops/annotation.cpp): the hint is an
// identity that survives the passes, and the distributed runtime redistributes whatever reaches
// it to the pinned layout, so parameters, gradients and state keep their layouts wherever the
// record is rebuilt (initialisation, each optimizer update).
//
// Paths: a key "a.b.c" drops its first component (the variable's name) and matches path "b.c"
// from any make_record whose field b is built by a make_record (in the same graph) with a field
// c; a key "a.b" matches field b of any record. Returns the number of hints inserted.
//
// With `every_model_field` (ZeRO, where every parameter and every piece of optimizer state is
// placed whether a strategy names it or not), every float tensor field of rank >= 1 of a model
// record (a record type with a name) that no key names is pinned too, replicated ("[-, -]"):
// the runtime adds its ZeRO split to that layout. With `early`, a hint follows the definition of
// the value it wraps (when that is a node of the record's graph) instead of preceding the record:
// a gradient is placed as soon as it is computed, not when the gradient record is built.
// With `owners` (a pipeline, backends/distributed/spmd_runtime.h step 9), a named field's hint
// also carries the owning stage (attribute "owner").
// A field that is a graph parameter (a loop's carried state: the model, the optimizer state) is
// hinted first in its graph instead, and every use of the parameter reads the hint: the values a
// loop carries are placed from its first iteration on.
//
// Errors (lang::UserError, naming `origin`, the strategy file): a name no record the program
// builds has (the message lists the paths it does have), and with a mesh, a layout that does not
// fit the field's type on it (rank, an axis used twice, a split that does not divide).
#pragma once

#include <map>
#include <string>

#include "parallel/layout/layout.h"
#include "semantics/ir/ir.h"

namespace spora::parallel {

int pin_record_fields(ir::Module& m, const std::map<std::string, std::string>& layouts_by_name,
                      const Mesh* mesh = nullptr, const std::string& origin = "strategy",
                      bool every_model_field = false, bool early = false,
                      const std::map<std::string, int64_t>* owners = nullptr);

}  // namespace spora::parallel
