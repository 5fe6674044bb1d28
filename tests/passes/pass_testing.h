// Helpers shared by the pass tests: IR written as text, and the semantic check every test
// module goes through (the interpreter's result and printed output are the same before and
// after the pass, the effectful nodes are all still there, and the module verifies).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "semantics/ir/ir.h"
#include "semantics/value.h"

namespace spora::passes::testing {

using Pass = std::function<void(ir::Module&)>;

// Registers the primitives and parses IR text (ir/parser.h syntax); the entry is @main.
std::unique_ptr<ir::Module> parse(std::string_view text);

// What running the entry shows: the lines `print` wrote, then `=> ` and the result (or
// `error: ` and the message).
std::string run(const ir::Module& m, const std::vector<sem::Value>& args = {});

// What happens to the effectful nodes (print, assert) of a module under a pass.
enum class Effects {
  same,    // the counts of each kind are unchanged
  copied,  // bodies were copied (inlining): no kind disappears
  pruned,  // code that can never run went (a branch not taken): only the run is compared
};

// Parses `input`, runs it, applies `pass`, verifies, runs it again and checks that the run is
// unchanged and the effectful nodes are as `effects` says. Returns the printed module.
std::string after_pass(std::string_view input, const Pass& pass,
                       const std::vector<sem::Value>& args = {}, Effects effects = Effects::same);

// The same on a module built by the caller.
std::string after_pass(ir::Module& m, const Pass& pass, const std::vector<sem::Value>& args = {},
                       Effects effects = Effects::same);

// How many times `what` occurs in text from `from` on.
size_t count(const std::string& text, const std::string& what, size_t from = 0);

sem::Value f32(double v);
sem::Value i64(int64_t v);

}  // namespace spora::passes::testing
