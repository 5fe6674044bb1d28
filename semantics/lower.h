// AST -> typed graph IR: name resolution, type and shape inference and specialisation, done
// together as one abstract interpretation of the program (a staging specialiser in the spirit
// of MindSpore's graph-mode parser and JAX's tracing, with Myia's per-signature graphs).
//
// How a program becomes IR:
//  1. Lowering starts at the entry function (main) and walks the AST with an environment
//     of *abstract values*: a run-time value is an IR node (with its type); everything the
//     compiler can know statically stays static: integer/float/bool literals (weakly typed,
//     as in JAX), strings, tuples and records of abstract values, functions, closures
//     (lambda + captured environment), models' static hyper-parameters, dtypes.
//  2. Operators and primitive calls bind their arguments to the primitive's signature in the
//     registry, materialise weak literals with the dtype of the tensor they meet, run the
//     primitive's shape rule (errors point at the expression and name both shapes), and emit
//     an Apply node.
//  3. A call of a `def` whose arguments and result are run-time data becomes a call of a
//     graph specialised for the arguments' types (one graph per signature, cached;
//     recursion calls the graph being built: with the declared return type, or else with the
//     type of the base case, the branch that does not recurse, until the body's result has the
//     type its recursive calls were given). A call
//     that passes or returns functions, or returns static values, is inlined instead, so
//     a closure whose identity is known at compile time leaves no trace in the IR. One chosen
//     by a run-time condition is defunctionalized (lower/closures.cpp): a tag and the
//     candidates' captured values, and its calls a switch over the candidates.
//     Eager mode runs the entry graph as it is lowered, inlining every call (recursion too);
//     the graphs of @jit, @checkpoint and @custom_grad functions are lowered as in graph mode.
//  4. Control flow with a static condition is decided at compile time; with a run-time
//     condition it becomes structured IR: `if` with two branch graphs, `while` with
//     cond/body graphs, `for_range`, `for_each`; variables a branch or a loop body reassigns
//     become the branch results / loop-carried state. Iterating a tuple unrolls.
//  5. The module is verified (semantics/ir/verifier.h) before it is returned.
//
// Every user error is reported through the DiagnosticEngine with the source range of the
// offending expression; lowering continues with the next statement where it can, so
// independent errors are all reported.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "semantics/amp.h"
#include "semantics/ir/ir.h"

namespace spora::sem {

// A program: the main file and every module it imports (std modules from lang/std/).
struct Program {
  std::vector<std::unique_ptr<lang::Module>> modules;  // modules[0] is the main file
  std::vector<std::string> module_names;               // "" for the main file, "std.nn", ...
};

// Parses `path` and, recursively, its imports (`import std.nn` reads <std_dir>/nn.sp).
// Diagnostics go to `diags`; returns null when a file could not be read or parsed.
std::unique_ptr<Program> load_program(lang::SourceManager& sources, const std::string& path,
                                      lang::DiagnosticEngine& diags,
                                      const std::string& std_dir = "");
// Loads the std modules that `imports` name, and the ones they import, into `program` (each
// once, appended breadth-first); false after errors (reported to diags).
bool load_std_imports(Program& program, lang::SourceManager& sources, lang::DiagnosticEngine& diags,
                      const std::vector<lang::Import>& imports, const std::string& std_dir = "");
// The same for a main file whose text is given (an editor's unsaved buffer), named `path`.
std::unique_ptr<Program> load_program_text(lang::SourceManager& sources, const std::string& path,
                                           std::string text, lang::DiagnosticEngine& diags,
                                           const std::string& std_dir = "");
// The directory of the standard library (lang/std in the source tree, or $SPORA_STD_DIR).
std::string default_std_dir();

struct LowerOptions {
  std::string entry = "main";
  // Also type-check every function whose parameters are all annotated (spora check).
  bool check_all = false;
  // Eager (PyNative) mode: run every operation as soon as it is lowered (`--mode eager`;
  // `set_mode("eager")` as the first statement of main does the same).
  bool eager = false;
  // Called for every name the lowering binds (parameters, let/var, loop targets) or reads, with
  // its range and its value's type ("f32[64,784]", "(f32, i32[3])", "int 3"): an editor's hover
  // (`spora lsp`). A function lowered for several argument types reports each.
  std::function<void(lang::SourceRange, const std::string&)> on_name;
  // Never run anything while lowering: `set_mode("eager")` is checked and then lowered as graph
  // mode (an editor's diagnostics; `spora lsp`).
  bool never_eager = false;
  // Every f32 becomes f64 (annotations, literals, initialisers, dtype names): like JAX's
  // enable_x64, for gradient checking in double precision.
  bool x64 = false;
  // After every grad / value_and_grad / jvp call, also emit numerical checks of the derivative
  // (central finite differences along random directions and, for small inputs, the full
  // Jacobian; forward vs reverse mode) recorded by `grad_check` nodes (spora grad-check).
  bool grad_check = false;
  // Recomputation (a parallel strategy's "recompute", parallel/step/step_graph.h): inside a
  // function being differentiated, a call of a model's forward whose receiver is the model field
  // at a path this accepts ("net.l1", the path value_and_grad names the leaves by) is lowered as
  // if the method were @checkpoint: its own graph, recomputed in the backward pass.
  std::function<bool(const std::string& field_path)> recompute;
  // Give every model record the program constructs a node: the record is packed into one
  // make_record as it is built (and read back through it), where the lowering would otherwise
  // keep its fields apart. A distributed run pins the plan's layouts on the fields of the
  // records the program builds (parallel/partition/pin_fields.h), so it sets this: a model built
  // and used in straight-line code then has a record to pin too.
  bool materialize_models = false;
  // `set_device("cpu" | "cuda")` among the first statements of main (with set_mode, like
  // MindSpore's set_context(device_target=...)): called before anything runs, with the device;
  // returns "" or why the device cannot be used (reported at the call). Unset: the statement
  // is checked and otherwise ignored (the IR does not depend on the device).
  std::function<std::string(const std::string& device)> set_device;
  // Automatic mixed precision (semantics/amp.h): `spora run --amp O1 [--amp-dtype bf16]`. Set,
  // it overrides the program's `set_amp("O1", bf16)` (a statement among the first of main,
  // with set_mode and set_device); unset, the program's choice (or O0) holds.
  std::optional<AmpPolicy> amp;
};

// Lowers the program to a typed module whose entry graph is `options.entry`. Returns null
// (with diagnostics) on errors. In eager mode the program has already run when this returns
// (its output printed); the module holds the tape of what ran.
std::unique_ptr<ir::Module> lower_program(const Program& program, lang::DiagnosticEngine& diags,
                                          const LowerOptions& options = {});

}  // namespace spora::sem
