// Driver, globals, function specialisation and value packing of the lowering.
#include "semantics/lower/lowerer.h"
#include "semantics/set_parallel.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "lang/parser.h"
#include "semantics/ir/verifier.h"

namespace spora::sem {

using lower::Lowerer;

std::string default_std_dir() {
  if (const char* d = std::getenv("SPORA_STD_DIR")) return d;
#ifdef SPORA_SOURCE_DIR_STR
  return std::string(SPORA_SOURCE_DIR_STR) + "/lang/std";
#else
  return "lang/std";
#endif
}

bool load_std_imports(Program& program, lang::SourceManager& sources, lang::DiagnosticEngine& diags,
                      const std::vector<lang::Import>& imports, const std::string& std_dir) {
  const int errors = diags.error_count();
  const std::string dir = std_dir.empty() ? default_std_dir() : std_dir;
  // Breadth-first over imports; each module is loaded once.
  std::vector<const lang::Import*> queue;
  for (const auto& imp : imports) queue.push_back(&imp);
  for (size_t q = 0; q < queue.size(); ++q) {
    const lang::Import& imp = *queue[q];
    std::string name;
    for (size_t k = 0; k < imp.path.size(); ++k) name += (k ? "." : "") + imp.path[k];
    bool seen = false;
    for (const auto& n : program.module_names) seen = seen || n == name;
    if (seen) continue;
    if (imp.path.size() != 2 || imp.path[0] != "std") {
      diags.error(
          imp.range,
          fmt::format("unknown module '{}': only std.<name> modules can be imported", name));
      continue;
    }
    const std::string file_path = dir + "/" + imp.path[1] + ".sp";
    if (!std::filesystem::exists(file_path)) {
      diags.error(imp.range, fmt::format("unknown module '{}' (no file {})", name, file_path));
      continue;
    }
    auto mod = lang::parse_file(sources, sources.load(file_path), diags);
    if (!mod) return false;
    program.modules.push_back(std::move(mod));
    program.module_names.push_back(name);
    for (const auto& i : program.modules.back()->imports) queue.push_back(&i);
  }
  return diags.error_count() == errors;
}

namespace {
// The program whose main file is `file` (registered in sources) and its imports.
std::unique_ptr<Program> load_imports(lang::SourceManager& sources, int file,
                                      lang::DiagnosticEngine& diags, const std::string& std_dir) {
  auto program = std::make_unique<Program>();
  auto main = lang::parse_file(sources, file, diags);
  if (!main || diags.has_errors()) return nullptr;
  program->modules.push_back(std::move(main));
  program->module_names.push_back("");
  if (!load_std_imports(*program, sources, diags, program->modules[0]->imports, std_dir) ||
      diags.has_errors())
    return nullptr;
  return program;
}
}  // namespace

std::unique_ptr<Program> load_program(lang::SourceManager& sources, const std::string& path,
                                      lang::DiagnosticEngine& diags, const std::string& std_dir) {
  int file;
  try {
    file = sources.load(path);
  } catch (const std::exception& e) {
    diags.error({}, fmt::format("cannot read '{}': {}", path, e.what()));
    return nullptr;
  }
  return load_imports(sources, file, diags, std_dir);
}

std::unique_ptr<Program> load_program_text(lang::SourceManager& sources, const std::string& path,
                                           std::string text, lang::DiagnosticEngine& diags,
                                           const std::string& std_dir) {
  return load_imports(sources, sources.add(path, std::move(text)), diags, std_dir);
}

std::unique_ptr<ir::Module> lower_program(const Program& program, lang::DiagnosticEngine& diags,
                                          const LowerOptions& options) {
  auto module = std::make_unique<ir::Module>();
  Lowerer lowerer(program, diags, *module, options);
  if (options.check_all) lowerer.check_annotated_functions();
  bool ok = lowerer.lower_entry(options.entry, options.eager);
  if (!ok || diags.has_errors()) return nullptr;
  auto problems = ir::verify(*module);
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p;
    throw lang::InternalError("the lowered IR does not verify:" + all);
  }
  return module;
}

}  // namespace spora::sem

namespace spora::sem::lower {

namespace {
const std::set<std::string>& special_builtins() {
  static const std::set<std::string> s = {
      "range",    "print",          "len",     "int",          "float",    "bool",        "shape",
      "grad",     "value_and_grad", "jacfwd",  "jacrev",       "hessian",  "jvp",         "vjp",
      "set_mode", "set_device",     "set_amp", "set_parallel", "tree_map", "tree_leaves", "replace",
      "shard"};
  return s;
}

constexpr const char* kModuleLevelLet =
    "a module-level let must be a compile-time constant (a number, string or tuple of those)";
}  // namespace

Lowerer::Lowerer(const Program& program, lang::DiagnosticEngine& diags, ir::Module& module,
                 const LowerOptions& options)
    : x64_(options.x64),
      grad_check_(options.grad_check),
      recompute_(options.recompute),
      materialize_models_(options.materialize_models),
      never_eager_(options.never_eager),
      on_name_(options.on_name),
      set_device_(options.set_device),
      amp_override_(options.amp),
      amp_(options.amp.value_or(AmpPolicy{})),
      program_(program),
      diags_(diags),
      module_(module) {
  globals_.resize(program.modules.size());
  for (size_t m = 0; m < program.modules.size(); ++m) declare_module(m);
  // Imports: `import std.nn` binds `nn` (or the alias) and, at lower priority, every name the
  // module defines (so std functions can be used unqualified unless shadowed).
  for (size_t m = 0; m < program.modules.size(); ++m)
    for (const auto& imp : program.modules[m]->imports) bind_import(m, imp);
  for (size_t m = 0; m < program.modules.size(); ++m) evaluate_constants(m);
}

void Lowerer::declare_function(size_t m, const lang::FuncDef& f, bool replace) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::Def;
  v->def = &f;
  v->module = static_cast<int>(m);
  declare_global(m, f.name, v, f.name_range, replace);
}

void Lowerer::declare_model(size_t m, const lang::ModelDef& md, bool replace) {
  auto v = std::make_shared<AVal>();
  v->kind = AK::ModelClass;
  v->model = &md;
  v->module = static_cast<int>(m);
  declare_global(m, md.name, v, md.name_range, replace);
}

void Lowerer::declare_global(size_t m, const std::string& name, AV v, lang::SourceRange r,
                             bool replace) {
  auto& g = globals_[m];
  if (!replace && g.count(name) && g[name].decl.valid()) {
    error(r, fmt::format("'{}' is already defined", name));
    diags_.note(g[name].decl, fmt::format("'{}' was first defined here", name));
    return;
  }
  g[name] = Binding{std::move(v), false, r};
}

void Lowerer::declare_module(size_t m) {
  if (globals_.size() <= m) globals_.resize(m + 1);
  const auto& mod = *program_.modules[m];
  for (const auto& f : mod.functions) declare_function(m, *f, false);
  for (const auto& md : mod.models) declare_model(m, *md, false);
}

void Lowerer::bind_import(size_t m, const lang::Import& imp) {
  std::string name;
  for (size_t k = 0; k < imp.path.size(); ++k) name += (k ? "." : "") + imp.path[k];
  for (size_t t = 0; t < program_.module_names.size(); ++t) {
    if (program_.module_names[t] != name) continue;
    auto ns = std::make_shared<AVal>();
    ns->kind = AK::Namespace;
    ns->s = name;
    ns->module = static_cast<int>(t);
    globals_[m][imp.alias.empty() ? imp.path.back() : imp.alias] = Binding{ns, false, imp.range};
    for (const auto& [n, b] : globals_[t])
      if (!globals_[m].count(n) && b.value->kind != AK::Namespace)
        globals_[m][n] = Binding{b.value, false, {}};
  }
}

// Module-level constants: evaluated now, must be static.
void Lowerer::evaluate_constants(size_t m) {
  for (const auto& st : program_.modules[m]->globals) {
    Env env;
    env.module = static_cast<int>(m);
    env.push();
    try {
      AV v = eval(*st->value, env);
      if (contains_function(v) ? false : !contains_static(v) || v->kind == AK::Node)
        fail(st->value->range, kModuleLevelLet);
      bind_pattern(st->pattern, v, env, true, false, st->value->range);
      for (const auto& [n, b] : env.scopes.back()) globals_[m][n] = b;
    } catch (const Abort&) {
    }
  }
}

void Lowerer::error(lang::SourceRange r, const std::string& message) { diags_.error(r, message); }

ir::Graph* Lowerer::current_graph(lang::SourceRange r) {
  if (!graph_) fail(r, kModuleLevelLet);
  return graph_;
}

void Lowerer::fail(lang::SourceRange r, const std::string& message) {
  diags_.error(r, message);
  throw Abort{};
}

const Binding* Lowerer::lookup_global(int module, const std::string& name) const {
  auto& g = globals_.at(module);
  auto it = g.find(name);
  if (it != g.end()) return &it->second;
  // Built-ins: primitives of the registry, special forms, dtype names.
  static std::map<std::string, Binding> builtins;
  if (x64_ && name == "f32") {
    static const Binding wide{make_dtype(DType::f64), false, {}};
    return &wide;
  }
  auto b = builtins.find(name);
  if (b != builtins.end()) return &b->second;
  AV v;
  if (auto dt = parse_dtype(name)) {
    v = make_dtype(*dt);
  } else if (special_builtins().count(name)) {
    auto a = std::make_shared<AVal>();
    a->kind = AK::Builtin;
    a->s = name;
    v = a;
  } else if (const Primitive* p = Registry::instance().find(name)) {
    if (!p->infer) return nullptr;  // control-flow rows are not callable by name
    auto a = std::make_shared<AVal>();
    a->kind = AK::Builtin;
    a->s = name;
    a->prim = p;
    v = a;
  } else {
    return nullptr;
  }
  return &(builtins[name] = Binding{v, false, {}});
}

void Lowerer::for_each_visible_name(const Env& env,
                                    const std::function<void(const std::string&)>& f) const {
  for (const auto& scope : env.scopes)
    for (const auto& [n, b] : scope) f(n);
  for (const auto& [n, b] : globals_.at(env.module)) f(n);
  for (const std::string& n : special_builtins()) f(n);
  for (const Primitive* p : Registry::instance().all())
    if (p->infer) f(p->name);
}

std::string Lowerer::unknown_name(const Env& env, const std::string& name) const {
  static const std::map<std::string, std::string> python = {
      {"True", "true"}, {"False", "false"}, {"None", "none"}};
  if (auto it = python.find(name); it != python.end())
    return fmt::format("unknown name '{}' (Spora writes {})", name, it->second);
  // A typo: the nearest name in scope, of the module, or built in; none for short names,
  // where one edit makes another word.
  if (name.size() < 3) return fmt::format("unknown name '{}'", name);
  const size_t most = name.size() < 6 ? 1 : 2;
  std::string best;
  size_t best_distance = most + 1;
  auto consider = [&](const std::string& candidate) {
    if (candidate.empty() || !(std::isalpha(static_cast<unsigned char>(candidate[0])) ||
                               candidate[0] == '_'))
      return;
    const size_t d = lang::edit_distance(name, candidate);
    if (d < best_distance || (d == best_distance && candidate < best)) {
      best = candidate;
      best_distance = d;
    }
  };
  for_each_visible_name(env, consider);
  if (best_distance > most) return fmt::format("unknown name '{}'", name);
  return fmt::format("unknown name '{}' (did you mean '{}'?)", name, best);
}

// ------------------------------------------------------------------ entry
bool Lowerer::lower_entry(const std::string& entry, bool eager) {
  const Binding* b = lookup_global(0, entry);
  if (!b || b->value->kind != AK::Def) {
    diags_.error({}, fmt::format("no function '{}' to run in {}", entry,
                                 program_.modules.empty() ? "" :
                                 diags_.sources().path(program_.modules[0]->file)));
    return false;
  }
  const lang::FuncDef& def = *b->value->def;
  if (!def.params.empty()) {
    error(def.name_range, fmt::format("'{}' must take no parameters to be run", entry));
    return false;
  }
  ir::Graph* g = module_.add_graph(entry);
  g->loc = def.range.begin;
  module_.entry = g;
  graph_ = g;
  Env env;
  env.module = 0;
  env.push();
  // `set_mode("eager" | "graph")`, `set_device("cpu" | "cuda")`, `set_amp("O1", bf16)` and
  // `set_parallel(...)` as the first statements of main (any order, each at most once) choose
  // the mode, the device, the mixed precision and the ranks (semantics/set_parallel.h: checked
  // here, carried out by `spora run`), before anything runs.
  size_t first = 0;
  bool mode_set = false, device_set = false, amp_set = false;
  const lang::Expr* parallel = nullptr;
  while (def.body && first < def.body->stmts.size() && first < 4) {
    const lang::Stmt& s0 = *def.body->stmts[first];
    if (is_set_parallel(s0) && !parallel) {
      ParallelDirectiveError why;
      if (!read_set_parallel(s0, &why)) {
        error(why.range, why.message);
        return false;
      }
      parallel = s0.value.get();
      ++first;
      continue;
    }
    if (s0.kind != lang::StmtKind::Expr || s0.value->kind != lang::ExprKind::Call ||
        s0.value->callee->kind != lang::ExprKind::Name)
      break;
    const std::string& callee = s0.value->callee->name;
    const lang::Expr& call = *s0.value;
    const bool one_string = call.args.size() == 1 && call.args[0]->kind == lang::ExprKind::String;
    const std::string arg = one_string ? call.args[0]->string_value : "";
    if (callee == "set_mode" && !mode_set) {
      if (arg != "eager" && arg != "graph") {
        error(call.range, "set_mode takes \"eager\" or \"graph\"");
        return false;
      }
      eager = arg == "eager";
      mode_set = true;
    } else if (callee == "set_device" && !device_set) {
      if (arg != "cpu" && arg != "cuda") {
        error(call.range, one_string
                              ? fmt::format("set_device takes \"cpu\" or \"cuda\", not \"{}\"", arg)
                              : std::string("set_device takes \"cpu\" or \"cuda\""));
        return false;
      }
      if (set_device_) {
        const std::string why = set_device_(arg);
        if (!why.empty()) {
          error(call.range, fmt::format("set_device(\"{}\"): {}", arg, why));
          return false;
        }
      }
      device_set = true;
    } else if (callee == "set_amp" && !amp_set) {
      if (!lower_set_amp(call)) return false;
      amp_set = true;
    } else {
      break;
    }
    ++first;
  }
  if (eager && parallel) {
    error(parallel->range,
          "set_parallel runs main on several ranks in graph mode (every rank runs the whole "
          "compiled program on its shards); eager mode runs each operation as it is lowered, "
          "with no program to shard: drop set_mode(\"eager\") or set_parallel");
    return false;
  }
  if (eager && never_eager_) eager = false;
  if (eager) {
    // What ran: the driver runs the entry graph only when the lowering did not (set_mode in
    // main overrides --mode either way).
    module_.annotations["lowered.eager"] = std::make_shared<bool>(true);
    eager_ = true;
    executor_ = std::make_unique<EagerExecutor>(module_, g);
    eager_value = [this](const ir::Node* n) { return executor_->value(n); };
  }
  try {
    Flow f = def.body ? lower_block(def.body->stmts, first, env) : Flow{true, eval(*def.body_expr, env), {}};
    AV result = f.returned && f.value ? f.value : make_none();
    if (contains_function(result)) fail(f.range, fmt::format("'{}' cannot return a function", entry));
    g->output = pack(materialise_numbers(result, f.range), f.range);
  } catch (const Abort&) {
    return false;
  }
  return !diags_.has_errors();
}

void Lowerer::check_annotated_functions() {
  // Every function whose parameters all have concrete annotations (no symbolic dims) is
  // specialised once with those types, so its body is checked even if main never calls it.
  for (size_t m = 0; m < 1 && m < program_.modules.size(); ++m) {
    for (const auto& f : program_.modules[m]->functions) {
      if (f->name == "main") continue;
      bool all_typed = !f->params.empty();
      for (const auto& p : f->params) all_typed = all_typed && p.type;
      if (!all_typed) continue;
      ir::Graph* g = module_.add_graph("check." + f->name);
      graph_ = g;
      Env env;
      env.module = static_cast<int>(m);
      env.push();
      std::vector<Arg> args;
      bool concrete = true;
      try {
        for (const auto& p : f->params) {
          TypeP t;
          try {
            const lang::DiagnosticEngine::Quiet probe(diags_);
            t = resolve_type(*p.type, env);
          } catch (const Abort&) {
            concrete = false;
          }
          if (!concrete || !t) { concrete = false; break; }
          args.push_back(Arg{"", make_node(module_.add_param(g, p.name, t, p.range.begin)), p.range});
        }
        if (concrete) {
          auto fn = lookup_global(static_cast<int>(m), f->name)->value;
          call_def(*fn, std::move(args), f->name_range);
        }
      } catch (const Abort&) {
      }
      graph_ = nullptr;
      module_.remove_graph(g);
    }
  }
}

// ------------------------------------------------------------------ values and nodes
ir::Node* Lowerer::constant(Value v, lang::SourceRange r) {
  return module_.add_constant(current_graph(r), std::move(v), loc(r));
}

ir::Node* Lowerer::to_node(const AV& v, lang::SourceRange r, std::optional<DType> dtype) {
  switch (v->kind) {
    case AK::Node: return v->node;
    case AK::Int: {
      // i32 unless the value needs 64 bits; an integer dtype too narrow for it is an error
      // (never a wrap-around), and i64 is written exactly (a double holds only 53 bits).
      const bool fits_i32 = v->i >= std::numeric_limits<int32_t>::min() && v->i <= std::numeric_limits<int32_t>::max();
      const DType d = dtype.value_or(fits_i32 ? DType::i32 : DType::i64);
      if (d == DType::i32 && !fits_i32) fail(r, fmt::format("integer {} does not fit in i32", v->i));
      if (d != DType::i64) return constant(Tensor::scalar(d, static_cast<double>(v->i)), r);
      Tensor t = Tensor::empty(DType::i64, {});
      t.data<int64_t>()[0] = v->i;
      return constant(t, r);
    }
    case AK::Float: {
      DType d = dtype && is_float(*dtype) ? *dtype : float_dtype();
      return constant(Tensor::scalar(d, v->f), r);
    }
    case AK::Bool: return constant(Tensor::scalar(dtype.value_or(DType::boolean), v->b ? 1 : 0), r);
    case AK::Str: return constant(Value::string(v->s), r);
    case AK::None: return emit_node("make_tuple", {}, {}, r);
    case AK::Tuple: {
      std::vector<ir::Node*> xs;
      for (const auto& e : v->elems) xs.push_back(to_node(e, r));
      return emit_node("make_tuple", xs, {}, r);
    }
    case AK::Record: return pack(materialise_numbers(v, r), r);
    case AK::Error: throw Abort{};
    default:
      fail(r, fmt::format("{} cannot be used as a run-time value here", describe(v)));
  }
}

AV Lowerer::materialise_numbers(const AV& v, lang::SourceRange r) {
  if (is_static_number(v)) return make_node(to_node(v, r));
  if (v->kind == AK::Tuple || v->kind == AK::Record) {
    auto c = std::make_shared<AVal>(*v);
    for (auto& e : c->elems) e = materialise_numbers(e, r);
    return c;
  }
  if (v->kind == AK::Error) throw Abort{};
  return v;
}

AV Lowerer::materialise_like(const AV& v, const AV& other, lang::SourceRange r) {
  if (is_static_number(v) && other && other->kind == AK::Node && other->type &&
      other->type->is_scalar() && is_float(other->type->dtype))
    return make_node(to_node(v, r, other->type->dtype));
  if ((v->kind == AK::Tuple || v->kind == AK::Record) && other && other->kind == v->kind &&
      other->elems.size() == v->elems.size()) {
    auto c = std::make_shared<AVal>(*v);
    for (size_t k = 0; k < c->elems.size(); ++k)
      c->elems[k] = materialise_like(c->elems[k], other->elems[k], r);
    return c;
  }
  return materialise_numbers(v, r);
}

void Lowerer::materialise_branches(AV (&results)[2], ir::Graph* const (&branches)[2],
                                   lang::SourceRange r) {
  const AV raw[2] = {results[0], results[1]};
  for (int k = 0; k < 2; ++k) {
    const Restore<ir::Graph*> in_branch(graph_, branches[k]);
    results[k] = materialise_like(raw[k], raw[1 - k], r);
  }
}

void Lowerer::flatten(const AV& v, std::vector<ir::Node*>& leaves, lang::SourceRange r, bool materialise) {
  if (materialise && is_static_number(v)) {
    leaves.push_back(to_node(v, r));
    return;
  }
  if (v->kind == AK::Node) leaves.push_back(v->node);
  for (const auto& e : v->elems) flatten(e, leaves, r, materialise);
}

AV Lowerer::unflatten(const AV& skel, const std::vector<ir::Node*>& leaves, size_t& pos) {
  if (skel->kind == AK::Node) return make_node(leaves.at(pos++));
  if (skel->kind == AK::Tuple || skel->kind == AK::Record || skel->kind == AK::Union) {
    auto c = std::make_shared<AVal>(*skel);
    for (auto& e : c->elems) e = unflatten(e, leaves, pos);
    return c;
  }
  return skel;
}

namespace {
bool has_runtime(const AV& v) {
  if (v->kind == AK::Node) return true;
  for (const auto& e : v->elems)
    if (has_runtime(e)) return true;
  return false;
}
std::string join(const std::vector<std::string>& xs) {
  std::string s;
  for (size_t k = 0; k < xs.size(); ++k) s += (k ? "," : "") + xs[k];
  return s;
}
}  // namespace

TypeP Lowerer::packed_type(const AV& v) const {
  if (v->kind == AK::Node) return v->type;
  if (v->kind == AK::None) return Type::unit();
  std::vector<TypeP> ts;
  std::vector<std::string> names;
  for (size_t k = 0; k < v->elems.size(); ++k) {
    if (!has_runtime(v->elems[k])) continue;
    ts.push_back(packed_type(v->elems[k]));
    if (v->kind == AK::Record) names.push_back(v->names[k]);
  }
  if (v->kind == AK::Record) return Type::record(v->record_name, names, ts);
  return Type::tuple(ts);
}

ir::Node* Lowerer::pack(const AV& v, lang::SourceRange r) {
  if (v->kind == AK::Node) return v->node;
  if (v->kind == AK::Error) throw Abort{};
  std::vector<ir::Node*> xs;
  std::vector<std::string> names;
  for (size_t k = 0; k < v->elems.size(); ++k) {
    if (!has_runtime(v->elems[k])) continue;
    xs.push_back(pack(v->elems[k], r));
    if (v->kind == AK::Record) names.push_back(v->names[k]);
  }
  if (v->kind == AK::Record) {
    Attrs a;
    a.set("name", v->record_name);
    a.set("names", join(names));
    return emit_node("make_record", xs, a, r);
  }
  return emit_node("make_tuple", xs, {}, r);
}

AV Lowerer::unpack(const AV& skel, ir::Node* n, lang::SourceRange r) {
  if (skel->kind == AK::Node) return make_node(n);
  if (skel->kind != AK::Tuple && skel->kind != AK::Record && skel->kind != AK::Union) return skel;
  auto c = std::make_shared<AVal>(*skel);
  int64_t k = 0;
  for (size_t e = 0; e < c->elems.size(); ++e) {
    if (!has_runtime(c->elems[e])) continue;
    ir::Node* part;
    if (skel->kind == AK::Record) {
      Attrs a;
      a.set("field", c->names[e]);
      part = emit_node("record_get", {n}, a, r);
    } else {
      Attrs a;
      a.set("index", k);
      part = emit_node("tuple_get", {n}, a, r);
    }
    ++k;
    c->elems[e] = unpack(c->elems[e], part, r);
  }
  return c;
}

// ------------------------------------------------------------------ annotations
int64_t Lowerer::eval_dim(const lang::Expr& e, Env& env, bool bind, int64_t actual) {
  if (e.kind == lang::ExprKind::Int) return e.int_value;
  if (e.kind == lang::ExprKind::Name) {
    if (e.name == "?" ) return actual;
    const Binding* b = env.lookup(e.name);
    if (!b) b = lookup_global(env.module, e.name);
    if (!b) {
      if (bind && actual != kDynamicDim) {
        env.declare(e.name, Binding{make_int(actual), false, e.range});
        return actual;
      }
      fail(e.range, fmt::format("unknown dimension '{}'", e.name));
    }
    if (b->value->kind != AK::Int)
      fail(e.range, fmt::format("dimension '{}' must be a compile-time integer, not {}", e.name, describe(b->value)));
    return b->value->i;
  }
  AV v = eval(e, env);
  if (v->kind != AK::Int) fail(e.range, fmt::format("a dimension must be a compile-time integer, not {}", describe(v)));
  return v->i;
}

TypeP Lowerer::resolve_type(const lang::TypeExpr& t, Env& env) {
  if (t.kind == lang::TypeExpr::Kind::Tuple) {
    std::vector<TypeP> ts;
    for (const auto& e : t.elems) ts.push_back(resolve_type(*e, env));
    return Type::tuple(ts);
  }
  auto dt = parse_dtype(t.name);
  if (dt) dt = widen(*dt);
  if (!dt) {
    if (t.name == "int") return Type::scalar(DType::i32);
    if (t.name == "float") return Type::scalar(float_dtype());
    if (t.name == "bool") return Type::scalar(DType::boolean);
    fail(t.range, fmt::format("'{}' is not a concrete tensor type here", t.name));
  }
  Shape shape;
  for (const auto& d : t.dims) shape.push_back(eval_dim(*d, env, false, kDynamicDim));
  return Type::tensor(*dt, shape);
}

AV Lowerer::check_annotation(const AV& v, const lang::TypeExpr& t, Env& env, const std::string& what,
                             lang::SourceRange r) {
  if (v->kind == AK::Error) return v;
  if (t.kind == lang::TypeExpr::Kind::Tuple) {
    std::vector<AV> elems;
    if (v->kind == AK::Tuple) {
      elems = v->elems;
    } else if (v->kind == AK::Node && v->type->kind == Type::Kind::Tuple) {
      for (size_t k = 0; k < v->type->elems.size(); ++k) {
        Attrs a;
        a.set("index", static_cast<int64_t>(k));
        elems.push_back(make_node(emit_node("tuple_get", {v->node}, a, r)));
      }
    } else {
      fail(r, fmt::format("{} must be a tuple of {} elements, not {}", what, t.elems.size(), describe(v)));
    }
    if (elems.size() != t.elems.size())
      fail(r, fmt::format("{} must be a tuple of {} elements, not {}", what, t.elems.size(), elems.size()));
    for (size_t k = 0; k < elems.size(); ++k)
      elems[k] = check_annotation(elems[k], *t.elems[k], env, fmt::format("element {} of {}", k, what), r);
    return make_tuple(elems);
  }
  auto type_text = [&]() {
    std::string s = t.name;
    if (t.has_dims) {
      s += "[";
      for (size_t k = 0; k < t.dims.size(); ++k) {
        const auto& d = *t.dims[k];
        s += (k ? "," : "") + (d.kind == lang::ExprKind::Int ? std::to_string(d.int_value) : d.kind == lang::ExprKind::Name ? d.name : std::string("..."));
      }
      s += "]";
    }
    return s;
  };
  if (t.name == "int" || t.name == "float" || t.name == "bool" || t.name == "str") {
    bool ok = (t.name == "int" && v->kind == AK::Int) ||
              (t.name == "float" && (v->kind == AK::Float || v->kind == AK::Int)) ||
              (t.name == "bool" && v->kind == AK::Bool) || (t.name == "str" && v->kind == AK::Str);
    if (!ok) {
      if (v->kind == AK::Node)
        fail(r, fmt::format("{} must be a compile-time {} but is a run-time {}", what, t.name, describe(v)));
      fail(r, fmt::format("{} must be {} {} but is {}", what, t.name == "int" ? "an" : "a", t.name, describe(v)));
    }
    if (t.name == "float" && v->kind == AK::Int) return make_float(static_cast<double>(v->i));
    return v;
  }
  if (auto dt0 = parse_dtype(t.name)) {
    const std::optional<DType> dt = widen(*dt0);
    AV val = v;
    if (is_static_number(v)) {
      if (t.has_dims && !t.dims.empty())
        fail(r, fmt::format("{} must be {} but is {}", what, type_text(), describe(v)));
      if (v->kind == AK::Float && !is_float(*dt))
        fail(r, fmt::format("{} must be {} but is {}", what, type_text(), describe(v)));
      val = make_node(to_node(v, r, *dt));
    }
    if (val->kind != AK::Node || !val->type->is_tensor())
      fail(r, fmt::format("{} must be a tensor {} but is {}", what, type_text(), describe(v)));
    const Type& ty = *val->type;
    const size_t want_rank = t.has_dims ? t.dims.size() : 0;
    // Inside the network under AMP, an f32 annotation also admits the low dtype (autocast
    // changes the dtypes a layer sees, not its declared interface).
    const bool amp_ok = in_amp() && *dt == float_dtype() && ty.dtype == amp_.low;
    if ((ty.dtype != *dt && !amp_ok) || ty.shape.size() != want_rank)
      fail(r, fmt::format("{} must be {} but is {}", what, type_text(), ty.str()));
    for (size_t k = 0; k < want_rank; ++k) {
      int64_t want = eval_dim(*t.dims[k], env, true, ty.shape[k]);
      if (want != ty.shape[k] && ty.shape[k] != kDynamicDim)
        fail(r, fmt::format("{} must be {} but is {} (dimension {} is {}, expected {})", what, type_text(),
                            ty.str(), k, ty.shape[k], want));
    }
    return val;
  }
  // A model name.
  const Binding* b = env.lookup(t.name);
  if (!b) b = lookup_global(env.module, t.name);
  if (!b || b->value->kind != AK::ModelClass) fail(t.range, fmt::format("unknown type '{}'", t.name));
  if (v->kind != AK::Record || v->model != b->value->model)
    fail(r, fmt::format("{} must be a {} model but is {}", what, t.name, describe(v)));
  return v;
}

// ------------------------------------------------------------------ calling functions
namespace {
// "a, then b, then c".
std::string chain(const std::vector<std::string>& xs) {
  std::string out;
  for (const auto& x : xs) out += (out.empty() ? "" : ", then ") + x;
  return out;
}

// v's structure and types, without its nodes (they may belong to a graph that is dropped).
AV type_skeleton(const AV& v) {
  if (v->kind != AK::Node && v->kind != AK::Tuple && v->kind != AK::Record && v->kind != AK::Union)
    return v;
  auto c = std::make_shared<AVal>(*v);
  c->node = nullptr;
  for (auto& e : c->elems) e = type_skeleton(e);
  return c;
}

// The field path of a model instance inside a differentiated argument ("net.l1"), read off its
// leaves' names ("net.l1.w", given by value_and_grad); "" when it has none.
std::string record_path(const AV& v) {
  if (!v || v->kind != AK::Record) return "";
  for (size_t k = 0; k < v->elems.size() && k < v->names.size(); ++k) {
    const AV& e = v->elems[k];
    std::string leaf;
    if (e && e->kind == AK::Node && e->node) leaf = e->node->name;
    if (e && e->kind == AK::Record) leaf = record_path(e);
    const std::string suffix = "." + v->names[k];
    if (leaf.size() > suffix.size() &&
        leaf.compare(leaf.size() - suffix.size(), suffix.size(), suffix) == 0)
      return leaf.substr(0, leaf.size() - suffix.size());
  }
  return "";
}
}  // namespace

AV Lowerer::call_def_body(const AVal& fn, std::vector<Arg> args, lang::SourceRange r) {
  DefCall c = bind_def_call(fn, std::move(args), r);
  for (const auto& b : c.bound)
    if (b->kind == AK::Error) return make_error();
  plan_def_call(c);
  if (!c.inline_call) {
    auto it = specs_.find(c.key);
    if (it != specs_.end() && it->second.failed) return make_error();
    if (it != specs_.end() && !it->second.inline_instead) return call_def_graph(c, it->second);
    if (it == specs_.end())
      if (std::optional<AV> v = specialise_def(c)) return *v;
  }
  return inline_def(c);
}

Lowerer::DefCall Lowerer::bind_def_call(const AVal& fn, std::vector<Arg> args,
                                        lang::SourceRange r) {
  const lang::FuncDef& def = *fn.def;
  DefCall c;
  c.fn = &fn;
  c.def = &def;
  c.range = r;
  // @stage(k) def f: the tensors flowing into f enter stage k (annotate.cpp).
  if (const std::optional<int64_t> stage = stage_of(def.decorators, fn.module))
    for (Arg& a : args) a.value = enter_stage(a.value, *stage, a.range);
  c.name = fn.self ? fn.self->record_name + "." + def.name : def.name;
  const std::string& fname = c.name;
  c.env.module = fn.module;
  c.env.push();
  // Bind arguments to parameters.
  std::vector<AV>& bound = c.bound;
  std::vector<lang::SourceRange>& ranges = c.ranges;
  bound.resize(def.params.size());
  ranges.assign(def.params.size(), r);
  size_t positional = 0;
  for (auto& a : args) {
    if (a.keyword.empty()) {
      if (positional >= def.params.size())
        fail(a.range, fmt::format("'{}' takes {} argument{} but {} were given", fname, def.params.size(),
                                  def.params.size() == 1 ? "" : "s", args.size()));
      bound[positional] = a.value;
      ranges[positional] = a.range;
      ++positional;
      continue;
    }
    size_t k = 0;
    while (k < def.params.size() && def.params[k].name != a.keyword) ++k;
    if (k == def.params.size()) {
      std::string names;
      for (const auto& p : def.params) names += (names.empty() ? "" : ", ") + p.name;
      fail(a.range, fmt::format("'{}' has no parameter named '{}' (parameters: {})", fname, a.keyword, names));
    }
    if (bound[k]) fail(a.range, fmt::format("parameter '{}' of '{}' is given twice", a.keyword, fname));
    bound[k] = a.value;
    ranges[k] = a.range;
  }
  if (fn.self) bind_receiver(c.env, fn.self, fn.module);
  for (size_t k = 0; k < def.params.size(); ++k) {
    const auto& p = def.params[k];
    if (!bound[k]) {
      if (!p.default_value)
        fail(r, fmt::format("missing argument '{}' in call to '{}'", p.name, fname));
      Env denv;
      denv.module = fn.module;
      denv.push();
      bound[k] = eval(*p.default_value, denv);
    }
    if (p.type)
      bound[k] = check_annotation(bound[k], *p.type, c.env,
                                  fmt::format("argument '{}' of '{}'", p.name, fname), ranges[k]);
  }
  return c;
}

void Lowerer::bind_receiver(Env& e, const AV& self, int module) {
  for (const auto& [n, v] : self->statics) e.declare(n, Binding{v, false, {}});
  for (size_t k = 0; k < self->names.size(); ++k)
    e.declare(self->names[k], Binding{self->elems[k], false, {}});
  if (self->model) {
    for (const auto& m : self->model->methods) {
      auto d = std::make_shared<AVal>();
      d->kind = AK::Def;
      d->def = m.get();
      d->self = self;
      d->module = module;
      e.declare(m->name, Binding{d, false, {}});
    }
  }
  e.declare("self", Binding{self, false, {}});
}

// A specialised graph, or inline. @checkpoint, @custom_grad (and @jit in eager mode) always
// get their own graph: autodiff and eager execution treat them as units.
void Lowerer::plan_def_call(DefCall& c) {
  const lang::FuncDef& def = *c.def;
  const AVal& fn = *c.fn;
  bool jit = false;
  for (const auto& d : def.decorators) {
    if (d.name == "custom_grad") c.custom = &d;
    if (d.name == "checkpoint" || d.name == "custom_grad") c.force_graph = true;
    if (d.name == "jit") jit = true;
  }
  if (eager_ && jit) c.force_graph = true;
  // LowerOptions::recompute: this layer's forward becomes a @checkpoint graph.
  bool recompute = !c.force_graph && !eager_ && ad_inline_ && recompute_ && fn.self &&
                   def.name == "forward" && !contains_function(fn.self);
  for (const auto& b : c.bound) recompute = recompute && !contains_function(b);
  recompute = recompute && recompute_(record_path(fn.self));
  c.recompute = recompute;
  c.force_graph = c.force_graph || recompute;
  bool inline_call = fn.self && contains_function(fn.self);
  for (const auto& b : c.bound) inline_call = inline_call || contains_function(b);
  if (c.force_graph && inline_call) {
    const char* kind = c.custom ? "custom_grad" : jit ? "jit" : "checkpoint";
    fail(c.range, fmt::format("'{}' is @{} and cannot take functions as arguments", c.name, kind));
  }
  for (const auto& d : def.decorators)
    if (d.name == "inline") inline_call = true;
  if (!c.force_graph && (op_by_op() || (ad_inline_ && !is_recursive(&def)))) inline_call = true;
  c.inline_call = inline_call;
  c.key =
      fmt::format("{}|{}", static_cast<const void*>(&def), fn.self ? skeleton_key(fn.self) : "");
  for (const auto& b : c.bound) c.key += "|" + skeleton_key(b);
  if (recompute) c.key += "|recompute";
  if (in_amp()) c.key += "|amp";  // the network's graphs differ from the same def's outside it
}

Flow Lowerer::lower_def_body(const DefCall& c, Env& body_env) {
  const lang::FuncDef& def = *c.def;
  if (def.body_expr) {
    Flow f;
    f.returned = true;
    f.value = eval(*def.body_expr, body_env);
    f.range = def.body_expr->range;
    return f;
  }
  Flow f = lower_block(def.body->stmts, 0, body_env);
  if (!f.returned && def.return_type)
    fail(def.name_range,
         fmt::format("missing return in '{}', which is declared to return a value", c.name));
  if (!f.returned) {
    f.value = make_none();
    f.range = def.name_range;
  }
  return f;
}

AV Lowerer::check_def_result(const DefCall& c, const AV& v, Env& body_env, lang::SourceRange r) {
  if (c.def->return_type)
    return check_annotation(v, *c.def->return_type, body_env,
                            fmt::format("the result of '{}'", c.name), r);
  return v;
}

AV Lowerer::call_def_graph(const DefCall& c, Spec& s) {
  const lang::SourceRange r = c.range;
  std::vector<ir::Node*> xs;
  if (c.fn->self && has_runtime(c.fn->self)) xs.push_back(pack(c.fn->self, r));
  for (const auto& b : c.bound)
    if (has_runtime(b)) xs.push_back(pack(b, r));
  if (s.in_progress) {
    if (s.declared_result)
      return make_node(module_.add_call(current_graph(r), s.graph, xs, s.declared_result, loc(r)));
    if (s.literal_base) return s.literal_base;
    if (s.inferred_result) {
      ir::Node* call =
          module_.add_call(current_graph(r), s.graph, xs, packed_type(s.inferred_result), loc(r));
      return unpack(s.inferred_result, call, r);
    }
    if (s.probing) throw RecursionPending{r, &s};
    fail(r, fmt::format("recursive function '{}' needs a declared return type (-> ...)", c.name));
  }
  ir::Node* call = module_.add_call(current_graph(r), s.graph, xs, s.graph->output->type, loc(r));
  return unpack(s.result_skeleton, call, r);
}

std::optional<AV> Lowerer::specialise_def(const DefCall& c) {
  const lang::FuncDef& def = *c.def;
  const std::string& fname = c.name;
  // A recursion whose compile-time arguments change at every call (f(x) = f(x + 1.0) on a
  // number) asks for a new specialisation each time and never ends.
  if (spec_depth_ >= kMaxSpecialisationDepth)
    fail(c.range, fmt::format("'{}' is specialised again for new compile-time arguments at each of "
                              "{} nested calls: its recursion changes a compile-time argument at "
                              "every call; give it run-time arguments (annotate the parameter, "
                              "e.g. x: f32)",
                              fname, kMaxSpecialisationDepth));
  const Restore<int> deeper(spec_depth_, spec_depth_ + 1);
  Spec& s = specs_[c.key];
  spec_order_.push_back(c.key);
  s.in_progress = true;
  ir::Graph* const caller = graph_;
  const Restore<ir::Graph*> restore(graph_);  // however this ends, nodes go to the caller again
  ir::Graph* g = nullptr;
  std::vector<ir::Node*> xs;
  const int errors_before = diags_.error_count();
  auto lower_graph = [&](const std::string& name) {
    return lower_def_graph(c, s, name, caller, g, xs);
  };
  // After errors in the body of a recursive function whose result type was inferred.
  auto note_inferred = [&] {
    if (diags_.error_count() > errors_before && s.inferred_result)
      diags_.note(
          def.name_range,
          fmt::format("'{}' declares no return type: its recursive calls were taken to return {}, "
                      "the type of its base case; write the return type (-> ...) if it is another",
                      fname, skeleton_key(s.inferred_result)));
  };
  try {
    // A recursive function without a declared return type: its base case gives the type
    // of the recursive calls' results, then the body is lowered again until the result
    // has the type the calls were given (a fixed point).
    const bool infer = !def.return_type && is_recursive(&def);
    if (infer) s.inferred_result = probe_base_case(s, fname, def, lower_graph);
    Flow f;
    AV got;
    std::vector<std::string> tried;
    for (;;) {
      const size_t mark = spec_order_.size();
      const int64_t models = model_counter_;
      f = lower_graph(fname);
      if (!infer) break;
      got = materialise_numbers(f.value, f.range);
      const bool literal_pass = s.literal_base != nullptr;  // never kept: its calls are literals
      s.literal_base = nullptr;
      if (!literal_pass && skeleton_key(got) == skeleton_key(s.inferred_result)) break;
      if (!literal_pass) tried.push_back(skeleton_key(s.inferred_result));
      graph_ = caller;
      module_.remove_graph(g);
      s.graph = nullptr;
      drop_specs_since(mark);
      model_counter_ = models;
      if (tried.size() == 8 || contains_function(got)) {
        s.inferred_result = nullptr;
        fail(def.name_range,
             fmt::format("cannot infer the result type of recursive function '{}': with its "
                         "calls giving {}, its body gives {}; write the return type (-> ...)",
                         fname, chain(tried),
                         contains_function(got) ? describe(got) : skeleton_key(got)));
      }
      s.inferred_result = type_skeleton(got);
    }
    // Errors the body recovered from: the graph is not used (nor the body inlined, which
    // would report them again).
    if (diags_.error_count() > errors_before) throw Abort{};
    AV result = f.value;
    if (c.force_graph &&
        (contains_function(result) || (contains_static(result) && result->kind != AK::None)))
      fail(f.range,
           fmt::format("'{}' must return run-time values (tensors) to be a graph of its own",
                       fname));
    if (infer) result = got;
    if (contains_function(result) || (contains_static(result) && result->kind != AK::None)) {
      // Static or functional results stay static: inline this function at its call sites.
      graph_ = caller;
      s.inline_instead = true;
      s.in_progress = false;
      s.graph = nullptr;
      module_.remove_graph(g);
      return std::nullopt;
    }
    g->output = pack(result, f.range);
    s.result_skeleton = result->kind == AK::None ? make_none() : result;
    if (c.custom) {
      graph_ = caller;
      ir::Graph* bwd = custom_grad_graph(*c.custom, c.fn->module, g, c.range);
      g->flags.push_back("custom_grad=" + bwd->name);
    }
  } catch (const Abort&) {
    s.in_progress = false;
    s.inline_instead = true;
    if (diags_.error_count() == errors_before) throw;
    note_inferred();
    s.failed = true;
    return make_error();
  }
  graph_ = caller;
  s.in_progress = false;
  ir::Node* call = module_.add_call(current_graph(c.range), g, xs, g->output->type, loc(c.range));
  return unpack(s.result_skeleton, call, c.range);
}

Flow Lowerer::lower_def_graph(const DefCall& c, Spec& s, const std::string& name, ir::Graph* caller,
                              ir::Graph*& g, std::vector<ir::Node*>& xs) {
  const lang::FuncDef& def = *c.def;
  const AVal& fn = *c.fn;
  g = module_.add_graph(name);
  g->loc = def.range.begin;
  for (const auto& d : def.decorators)
    if (d.name != "custom_grad" && d.name != "stage") g->flags.push_back(d.name);
  if (c.recompute) g->flags.push_back("checkpoint");
  s.graph = g;
  graph_ = g;
  xs.clear();
  Env body_env = c.env;
  if (fn.self && has_runtime(fn.self)) {
    ir::Node* p = module_.add_param(g, "self", packed_type(fn.self), def.range.begin);
    AV inner = unpack(fn.self, p, c.range);
    bind_receiver(body_env, inner, fn.module);
    const Restore<ir::Graph*> in_caller(graph_, caller);
    xs.push_back(pack(fn.self, c.range));
  }
  for (size_t k = 0; k < def.params.size(); ++k) {
    AV inner = c.bound[k];
    if (has_runtime(c.bound[k])) {
      ir::Node* p = module_.add_param(g, def.params[k].name, packed_type(c.bound[k]),
                                      def.params[k].range.begin);
      inner = unpack(c.bound[k], p, c.range);
      const Restore<ir::Graph*> in_caller(graph_, caller);
      xs.push_back(pack(c.bound[k], c.ranges[k]));
    }
    declare(body_env, def.params[k].name, Binding{inner, false, def.params[k].range});
  }
  if (def.return_type) {
    try {
      const lang::DiagnosticEngine::Quiet probe(diags_);
      s.declared_result = resolve_type(*def.return_type, body_env);
    } catch (const Abort&) {
    }
  }
  Flow f = lower_def_body(c, body_env);
  f.value = check_def_result(c, f.value, body_env, f.range);
  if (f.value->kind == AK::Error || contains_error(f.value)) throw Abort{};
  return f;
}

void Lowerer::declare(Env& env, const std::string& name, Binding b) {
  note_name(b.decl, b.value);
  env.declare(name, std::move(b));
}

AV Lowerer::inline_def(const DefCall& c) {
  const lang::FuncDef& def = *c.def;
  // Op by op (eager mode), a recursion is as deep as its run-time values make it.
  if (inline_depth_ > max_inline_depth())
    fail(c.range,
         op_by_op()
             ? fmt::format("'{}' recurses too deeply ({} levels)", c.name, max_inline_depth())
             : fmt::format("'{}' recurses through compile-time values too deeply ({} levels); "
                           "give it run-time arguments",
                           c.name, max_inline_depth()));
  const Restore<int> deeper(inline_depth_, inline_depth_ + 1);
  Env body_env = c.env;
  for (size_t k = 0; k < def.params.size(); ++k)
    declare(body_env, def.params[k].name, Binding{c.bound[k], false, def.params[k].range});
  Flow f = lower_def_body(c, body_env);
  return check_def_result(c, f.value, body_env, f.range);
}

void Lowerer::drop_specs_since(size_t mark) {
  while (spec_order_.size() > mark) {
    auto it = specs_.find(spec_order_.back());
    if (it != specs_.end()) {
      if (it->second.graph) module_.remove_graph(it->second.graph);
      specs_.erase(it);
    }
    spec_order_.pop_back();
  }
}

AV Lowerer::probe_base_case(Spec& s, const std::string& fname, const lang::FuncDef& def,
                            const std::function<Flow(const std::string&)>& lower) {
  const size_t mark = spec_order_.size();
  const int64_t models = model_counter_;  // models made in the dropped graph do not count
  ir::Graph* saved = graph_;
  AV base;
  lang::SourceRange call;
  auto drop = [&] {
    graph_ = saved;
    model_counter_ = models;
    s.probing = false;
    if (s.graph) module_.remove_graph(s.graph);
    s.graph = nullptr;
    drop_specs_since(mark);
  };
  s.probing = true;
  try {
    Flow f = lower(fname + ".probe");
    if (f.value->kind == AK::Float || f.value->kind == AK::Int) s.literal_base = f.value;
    base = type_skeleton(materialise_numbers(f.value, f.range));
  } catch (const RecursionPending& p) {
    if (p.spec != &s) {  // another function's base case is missing: that one reports it
      drop();
      throw;
    }
    call = p.call;
  } catch (...) {
    drop();
    throw;
  }
  drop();
  if (!base) {
    error(def.name_range, fmt::format("cannot infer the result type of recursive function '{}': every path "
                                      "through it calls it again, so no branch (a base case) gives the type; "
                                      "write the return type (-> ...)",
                                      fname));
    diags_.note(call, fmt::format("'{}' calls itself here", fname));
    throw Abort{};
  }
  if (contains_function(base) || (contains_static(base) && base->kind != AK::None))
    fail(def.name_range, fmt::format("cannot infer the result type of recursive function '{}': its base case "
                                     "gives {}, not run-time values; write the return type (-> ...)",
                                     fname, describe(base)));
  return base;
}

ir::Graph* Lowerer::custom_grad_graph(const lang::Decorator& d, int module, ir::Graph* fwd, lang::SourceRange r) {
  if (d.args.size() != 1 || !d.kwargs.empty()) fail(d.range, "@custom_grad takes one function: @custom_grad(bwd)");
  Env env;
  env.module = module;
  env.push();
  AV bwd = eval(*d.args[0], env);
  if (bwd->kind != AK::Def) fail(d.args[0]->range, fmt::format("@custom_grad needs a def, not {}", describe(bwd)));
  // Specialise bwd for (inputs..., out, dout) by calling it from a scratch graph.
  ir::Graph* scratch = module_.add_graph("custom_grad.scratch");
  std::vector<Arg> args;
  for (ir::Node* p : fwd->params)
    args.push_back(Arg{"", make_node(module_.add_param(scratch, p->name, p->type)), d.range});
  args.push_back(Arg{"", make_node(module_.add_param(scratch, "out", fwd->result_type())), d.range});
  args.push_back(Arg{"", make_node(module_.add_param(scratch, "dout", fwd->result_type())), d.range});
  try {
    const Restore<ir::Graph*> in_scratch(graph_, scratch);
    const Restore<bool> no_inline(ad_inline_, false), not_eager(eager_, false);
    call_def(*bwd, std::move(args), d.range);
  } catch (...) {
    module_.remove_graph(scratch);
    throw;
  }
  ir::Graph* result = nullptr;
  for (ir::Node* n : scratch->nodes)
    if (n->callee) result = n->callee;
  module_.remove_graph(scratch);
  if (!result) fail(d.range, "the @custom_grad function must return the input gradients as tensors");
  (void)r;
  return result;
}

AV Lowerer::call_closure(const AVal& clo, std::vector<Arg> args, lang::SourceRange r) {
  const lang::Expr& lam = *clo.lambda;
  Env env = *clo.env;
  env.push();
  size_t positional = 0;
  std::vector<bool> given(lam.params.size(), false);
  for (auto& a : args) {
    size_t k = positional;
    if (!a.keyword.empty()) {
      k = 0;
      while (k < lam.params.size() && lam.params[k].name != a.keyword) ++k;
      if (k == lam.params.size()) fail(a.range, fmt::format("the lambda has no parameter named '{}'", a.keyword));
    } else {
      ++positional;
    }
    if (k >= lam.params.size())
      fail(a.range, fmt::format("the lambda takes {} argument{} but {} were given", lam.params.size(),
                                lam.params.size() == 1 ? "" : "s", args.size()));
    AV v = a.value;
    if (lam.params[k].type)
      v = check_annotation(v, *lam.params[k].type, env, fmt::format("argument '{}' of the lambda", lam.params[k].name), a.range);
    declare(env, lam.params[k].name, Binding{v, false, lam.params[k].range});
    given[k] = true;
  }
  for (size_t k = 0; k < lam.params.size(); ++k) {
    if (given[k]) continue;
    if (!lam.params[k].default_value)
      fail(r, fmt::format("missing argument '{}' in call to the lambda", lam.params[k].name));
    declare(env, lam.params[k].name,
            Binding{eval(*lam.params[k].default_value, env), false, lam.params[k].range});
  }
  if (inline_depth_ > max_inline_depth())
    fail(r, fmt::format("lambdas call each other too deeply ({} levels)", max_inline_depth()));
  const Restore<int> deeper(inline_depth_, inline_depth_ + 1);
  if (lam.body_expr) return eval(*lam.body_expr, env);
  Flow f = lower_block(lam.body_block->stmts, 0, env);
  return f.returned ? f.value : make_none();
}

}  // namespace spora::sem::lower
