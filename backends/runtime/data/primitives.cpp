// The rows of the data primitives (see data.h and README.md): signature, shape rule, kernel.
//
//   fashion_mnist(split, batch=64, shuffle=false, seed=0, drop_last=false, normalize=true,
//                 mean=0.286, std=0.353, flatten=false, limit=0, root=..., progress=false,
//                 prefetch=4)
//       -> iter<(f32[B,1,28,28], i32[B]), (f32[R,1,28,28], i32[R])>  (R = n % B when > 0)
//   batches(x, y=none, batch, shuffle=false, seed=0, drop_last=false, progress=false, prefetch=2)
//       -> iter<(x[B,...], y[B,...]), ...> (just x[B,...] without y)
//   load_idx(path, dtype=none) -> the file's tensor (header read at compile time)
//   load_npy(path, dtype=none, shape=none) -> likewise; dtype and shape both given: the file
//       need not exist at compile time (a file the program itself writes first)
//   save_idx(x, path), save_npy(x, path), save(value, path) -> ()   (atomic writes)
//   load(path, like) -> a value of like's type (checkpoint.h)
//   report(name, value) -> ()        a batch metric (progress.h)
//   log_epoch(epoch, **metrics) -> ()  one line per epoch, kept for the curves
//   save_curves(prefix) -> ()        prefix.csv and prefix.svg
//
// `seed` of fashion_mnist and batches may be a run-time integer (`seed=epoch` in a graph-mode
// epoch loop): the rows list it under the facet "run_time_attrs", so the lowering
// (semantics/lower/call.cpp) passes such a value as the last input and sets the attribute to
// none.
//
// Every row is non-differentiable; the ones that touch files or print are effectful, so the
// passes never remove, merge or reorder them (a load stays after the save before it).
#include <iostream>
#include <mutex>

#include "backends/runtime/data/checkpoint.h"
#include "backends/runtime/data/data.h"
#include "backends/runtime/data/dataset.h"
#include "backends/runtime/data/idx.h"
#include "backends/runtime/data/npy.h"
#include "backends/runtime/data/progress.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {

namespace {

using sem::Attr;
using sem::Attrs;
using sem::ParamSpec;
using sem::Primitive;
using sem::Type;
using sem::TypeP;
using sem::Value;
using AttrKind = ParamSpec::AttrKind;

std::ostream* g_out = nullptr;
std::ostream& out() { return g_out ? *g_out : std::cout; }

[[noreturn]] void fail(const std::string& message) { throw lang::UserError(message); }

ParamSpec input(std::string name) { return {std::move(name), ParamSpec::Kind::Input, AttrKind::Int, std::nullopt}; }
ParamSpec optional_input(std::string name) {
  return {std::move(name), ParamSpec::Kind::OptionalInput, AttrKind::Int, std::nullopt};
}
ParamSpec value(std::string name) { return {std::move(name), ParamSpec::Kind::Value, AttrKind::Int, std::nullopt}; }
ParamSpec kwargs(std::string name) {
  return {std::move(name), ParamSpec::Kind::Kwargs, AttrKind::String, Attr{std::string()}};
}
ParamSpec attr(std::string name, AttrKind kind, std::optional<Attr> def = std::nullopt) {
  return {std::move(name), ParamSpec::Kind::Attr, kind, std::move(def)};
}

// Attribute getters with the signature's default when absent (hand-written IR may omit them).
int64_t int_or(const Attrs& a, const char* n, int64_t d) { return a.has(n) ? a.get_int(n) : d; }
bool bool_or(const Attrs& a, const char* n, bool d) { return a.has(n) ? a.get_bool(n) : d; }
double float_or(const Attrs& a, const char* n, double d) { return a.has(n) ? a.get_float(n) : d; }
std::string string_or(const Attrs& a, const char* n, std::string d) { return a.has(n) ? a.get_string(n) : d; }
std::optional<DType> dtype_attr(const Attrs& a, const char* n, const std::string& prim) {
  if (a.is_none(n)) return std::nullopt;
  if (const auto* d = std::get_if<DType>(a.find(n))) return *d;
  fail(prim + ": " + n + " must be a dtype (f32, f64, i32, i64, bool), not " + sem::attr_str(*a.find(n)));
}

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params, bool effectful) {
  Primitive p;
  p.name = std::move(name);
  p.family = "io";
  p.doc = std::move(doc);
  p.params = std::move(params);
  p.effectful = effectful;
  p.differentiable = false;
  return p;
}

Value unit() { return Value::tuple({}); }
Value opaque(std::shared_ptr<sem::Opaque> o) {
  Value v;
  v.kind = Value::Kind::Opaque;
  v.opaque = std::move(o);
  return v;
}

const sem::Type& tensor_in(const std::vector<TypeP>& in, size_t i, const std::string& prim, const char* what) {
  if (i >= in.size() || !in[i]) throw lang::InternalError(prim + ": missing input " + std::to_string(i));
  if (!in[i]->is_tensor()) fail(prim + ": " + what + " must be a tensor, not " + in[i]->str());
  return *in[i];
}

// A scalar metric: the one element of a 1-element tensor.
double metric(const Value& v, const std::string& prim, const std::string& name) {
  if (!v.is_tensor() || v.tensor.numel() != 1)
    fail(prim + ": " + name + " must be a single number, not " + sem::format_value(v));
  return v.tensor.item();
}
void check_metric_type(const TypeP& t, const std::string& prim, const std::string& name) {
  if (!t || !t->is_tensor() || t->numel() != 1)
    fail(prim + ": " + name + " must be a single number, not " + (t ? t->str() : std::string("?")));
}

// ---- datasets ---------------------------------------------------------------------------------

// The seed is the last input (given at run time) when the attribute is present and none.
bool seed_is_input(const Attrs& a) { return a.has("seed") && a.is_none("seed"); }
void mark_run_time_seed(Primitive& p) { p.facets["run_time_attrs"] = std::vector<std::string>{"seed"}; }
void check_seed_input(const std::vector<TypeP>& in, const Attrs& a, const std::string& prim) {
  if (!seed_is_input(a)) return;
  if (in.empty() || !in.back() || !in.back()->is_scalar() || !is_integer(in.back()->dtype))
    fail(prim + ": a run-time seed must be an integer scalar, not " +
         (in.empty() || !in.back() ? std::string("missing") : in.back()->str()));
}

BatchOptions batch_options(const Attrs& a, int64_t default_prefetch, const std::vector<Value>* in = nullptr) {
  BatchOptions o;
  o.batch = a.get_int("batch");
  o.shuffle = bool_or(a, "shuffle", false);
  if (!seed_is_input(a)) o.seed = int_or(a, "seed", 0);
  else if (in && !in->empty()) o.seed = static_cast<int64_t>(in->back().tensor.get(0));
  o.drop_last = bool_or(a, "drop_last", false);
  o.progress = bool_or(a, "progress", false);
  o.prefetch = int_or(a, "prefetch", default_prefetch);
  if (o.batch < 1) fail("batch must be at least 1, not " + std::to_string(o.batch));
  if (o.prefetch < 1) fail("prefetch must be at least 1, not " + std::to_string(o.prefetch));
  return o;
}

FashionOptions fashion_options(const Attrs& a) {
  FashionOptions o;
  o.split = a.get_string("split");
  o.normalize = bool_or(a, "normalize", true);
  o.mean = float_or(a, "mean", 0.2860);
  o.std = float_or(a, "std", 0.3530);
  o.flatten = bool_or(a, "flatten", false);
  o.limit = int_or(a, "limit", 0);
  o.root = string_or(a, "root", o.root);
  if (o.normalize && !(o.std > 0)) fail("fashion_mnist: std must be positive, not " + std::to_string(o.std));
  return o;
}

void add_fashion_mnist(sem::Registry& r) {
  Primitive p = row(
      "fashion_mnist",
      "fashion_mnist(split, batch, shuffle, seed, ...): Fashion-MNIST batches (images, labels), prefetched",
      {attr("split", AttrKind::String), attr("batch", AttrKind::Int, Attr{int64_t{64}}),
       attr("shuffle", AttrKind::Bool, Attr{false}), attr("seed", AttrKind::Int, Attr{int64_t{0}}),
       attr("drop_last", AttrKind::Bool, Attr{false}), attr("normalize", AttrKind::Bool, Attr{true}),
       attr("mean", AttrKind::Float, Attr{0.2860}), attr("std", AttrKind::Float, Attr{0.3530}),
       attr("flatten", AttrKind::Bool, Attr{false}), attr("limit", AttrKind::Int, Attr{int64_t{0}}),
       attr("root", AttrKind::String, Attr{std::string("/usr/share/datasets/fashion-mnist")}),
       attr("progress", AttrKind::Bool, Attr{false}), attr("prefetch", AttrKind::Int, Attr{int64_t{4}})},
      false);
  mark_run_time_seed(p);
  p.infer = [](const std::vector<TypeP>& in, const Attrs& a) -> TypeP {
    check_seed_input(in, a, "fashion_mnist");
    const FashionOptions o = fashion_options(a);
    const BatchOptions b = batch_options(a, 4);
    const FashionFiles f = fashion_files(o);
    return Type::iterator("", plan_batches(f.n, b.batch, b.drop_last).types(fashion_example(o, f)));
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    const FashionOptions o = fashion_options(a);
    const BatchOptions b = batch_options(a, 4, &in);
    FashionFiles f = fashion_files(o);
    return opaque(std::make_shared<FashionMnist>(o, b, std::move(f)));
  };
  r.add(std::move(p));
}

void add_batches(sem::Registry& r) {
  Primitive p = row("batches",
                    "batches(x, y, batch, shuffle, seed, drop_last): mini-batches of tensors in memory, prefetched",
                    {input("x"), optional_input("y"), attr("batch", AttrKind::Int),
                     attr("shuffle", AttrKind::Bool, Attr{false}), attr("seed", AttrKind::Int, Attr{int64_t{0}}),
                     attr("drop_last", AttrKind::Bool, Attr{false}), attr("progress", AttrKind::Bool, Attr{false}),
                     attr("prefetch", AttrKind::Int, Attr{int64_t{2}})},
                    false);
  mark_run_time_seed(p);
  p.infer = [](const std::vector<TypeP>& in, const Attrs& a) -> TypeP {
    check_seed_input(in, a, "batches");
    const BatchOptions b = batch_options(a, 2);
    std::vector<TypeP> example;
    int64_t n = -1;
    for (size_t i = 0; i < in.size() - (seed_is_input(a) ? 1 : 0); ++i) {
      const Type& t = tensor_in(in, i, "batches", i == 0 ? "x" : "y");
      if (t.rank() == 0) fail("batches: " + std::string(i == 0 ? "x" : "y") + " must have a first dimension to batch, not " + t.str());
      if (t.shape[0] == sem::kDynamicDim) fail("batches: the number of rows of " + t.str() + " must be known");
      if (n >= 0 && t.shape[0] != n)
        fail("batches: x has " + std::to_string(n) + " rows but y has " + std::to_string(t.shape[0]) + " (" +
             in[0]->str() + " and " + t.str() + ")");
      n = t.shape[0];
      example.push_back(Type::tensor(t.dtype, sem::Shape(t.shape.begin() + 1, t.shape.end())));
    }
    return Type::iterator("", plan_batches(n, b.batch, b.drop_last).types(example));
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    const BatchOptions b = batch_options(a, 2, &in);
    std::vector<sem::Tensor> ts;
    std::string key = "batches(";
    for (size_t i = 0; i < in.size() - (seed_is_input(a) ? 1 : 0); ++i) {
      const Value& v = in[i];
      if (v.kind == Value::Kind::None) continue;
      ts.push_back(v.tensor);
      key += v.tensor.type()->str() + ",";
    }
    key += std::to_string(b.batch) + "," + std::to_string(b.shuffle) + "," + std::to_string(b.seed) + "," +
           std::to_string(b.drop_last) + ")";
    return opaque(std::make_shared<TensorBatches>(std::move(ts), b, key));
  };
  r.add(std::move(p));
}

// ---- idx and npy --------------------------------------------------------------------------------

void add_idx(sem::Registry& r) {
  Primitive load = row("load_idx", "load_idx(path, dtype): an idx file (plain or .gz) as a tensor",
                       {attr("path", AttrKind::String), attr("dtype", AttrKind::Any, Attr{std::monostate{}})}, true);
  load.infer = [](const std::vector<TypeP>&, const Attrs& a) -> TypeP {
    const std::string path = a.get_string("path");
    const IdxHeader h = read_idx_header(path);
    remember_header(path, h.str());
    return Type::tensor(dtype_attr(a, "dtype", "load_idx").value_or(h.dtype()), h.shape);
  };
  load.eval = [](const std::vector<Value>&, const Attrs& a) -> Value {
    const std::string path = a.get_string("path");
    check_header(path, read_idx_header(path).str());
    return Value(read_idx(path, dtype_attr(a, "dtype", "load_idx")));
  };
  r.add(std::move(load));

  Primitive save = row("save_idx", "save_idx(x, path): write x as an idx file (atomically)",
                       {input("x"), attr("path", AttrKind::String)}, true);
  save.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    tensor_in(in, 0, "save_idx", "x");
    return Type::unit();
  };
  save.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    write_idx(in.at(0).tensor, a.get_string("path"));
    return unit();
  };
  r.add(std::move(save));
}

void add_npy(sem::Registry& r) {
  Primitive load =
      row("load_npy", "load_npy(path, dtype, shape): a .npy file as a tensor",
          {attr("path", AttrKind::String), attr("dtype", AttrKind::Any, Attr{std::monostate{}}),
           attr("shape", AttrKind::IntsOrNone, Attr{std::monostate{}})},
          true);
  load.infer = [](const std::vector<TypeP>&, const Attrs& a) -> TypeP {
    const std::string path = a.get_string("path");
    const auto dtype = dtype_attr(a, "dtype", "load_npy");
    const bool has_shape = !a.is_none("shape");
    if (dtype && has_shape) return Type::tensor(*dtype, a.get_ints("shape"));
    const NpyHeader h = read_npy_header(path);
    remember_header(path, h.str());
    if (dtype && *dtype != h.dtype)
      fail("load_npy: '" + path + "' holds " + h.str() + ", not " + std::string(dtype_name(*dtype)));
    if (has_shape && a.get_ints("shape") != h.shape)
      fail("load_npy: '" + path + "' holds " + h.str() + ", not the shape " + sem::shape_str(a.get_ints("shape")));
    return Type::tensor(h.dtype, h.shape);
  };
  load.eval = [](const std::vector<Value>&, const Attrs& a) -> Value {
    const std::string path = a.get_string("path");
    sem::Tensor t = read_npy(path);
    const std::string now = t.type()->str();
    const auto dtype = dtype_attr(a, "dtype", "load_npy");
    if (dtype && !a.is_none("shape")) {
      const std::string want = Type::tensor(*dtype, a.get_ints("shape"))->str();
      if (want != now) fail("load_npy: '" + path + "' holds " + now + ", the program expects " + want);
    } else {
      check_header(path, now);
    }
    return Value(std::move(t));
  };
  r.add(std::move(load));

  Primitive save = row("save_npy", "save_npy(x, path): write x as a .npy file (atomically)",
                       {input("x"), attr("path", AttrKind::String)}, true);
  save.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    tensor_in(in, 0, "save_npy", "x");
    return Type::unit();
  };
  save.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    write_npy(in.at(0).tensor, a.get_string("path"));
    return unit();
  };
  r.add(std::move(save));
}

// ---- checkpoints ------------------------------------------------------------------------------

void check_saveable(const TypeP& t, const std::string& prim, const std::string& at) {
  switch (t->kind) {
    case Type::Kind::Tensor: return;
    case Type::Kind::Tuple:
      for (size_t i = 0; i < t->elems.size(); ++i)
        check_saveable(t->elems[i], prim, at.empty() ? std::to_string(i) : at + "." + std::to_string(i));
      return;
    case Type::Kind::Record:
      for (size_t i = 0; i < t->elems.size(); ++i)
        check_saveable(t->elems[i], prim, at.empty() ? t->names[i] : at + "." + t->names[i]);
      return;
    default:
      fail(prim + ": " + (at.empty() ? std::string("the value") : "field " + at) + " is " + t->str() +
           "; checkpoints hold tensors, tuples and models");
  }
}

void add_checkpoints(sem::Registry& r) {
  Primitive save = row("save", "save(value, path): write a model (any tree of tensors) as a checkpoint",
                       {value("value"), attr("path", AttrKind::String)}, true);
  save.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    if (in.size() != 1 || !in[0]) throw lang::InternalError("save: expected one input");
    check_saveable(in[0], "save", "");
    return Type::unit();
  };
  save.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    save_checkpoint(in.at(0), a.get_string("path"));
    return unit();
  };
  r.add(std::move(save));

  Primitive load = row("load", "load(path, like): read a checkpoint into a value of like's type",
                       {attr("path", AttrKind::String), value("like")}, true);
  load.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    if (in.size() != 1 || !in[0]) throw lang::InternalError("load: expected one input");
    check_saveable(in[0], "load", "");
    return in[0];
  };
  load.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    return load_checkpoint(a.get_string("path"), in.at(0));
  };
  r.add(std::move(load));
}

// ---- reports ------------------------------------------------------------------------------------

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    size_t comma = s.find(',', at);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

void add_reports(sem::Registry& r) {
  Primitive report = row("report", "report(name, value): record a batch metric (the progress bar shows its mean)",
                         {attr("name", AttrKind::String), input("value")}, true);
  report.infer = [](const std::vector<TypeP>& in, const Attrs& a) -> TypeP {
    if (in.size() != 1) throw lang::InternalError("report: expected one input");
    check_metric_type(in[0], "report", "the value of '" + a.get_string("name") + "'");
    return Type::unit();
  };
  report.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    const std::string name = a.get_string("name");
    Recorder::instance().report(name, metric(in.at(0), "report", "the value of '" + name + "'"));
    return unit();
  };
  r.add(std::move(report));

  Primitive log = row("log_epoch", "log_epoch(epoch, name=value, ...): print and record one epoch's metrics",
                      {input("epoch"), kwargs("metrics")}, true);
  log.infer = [](const std::vector<TypeP>& in, const Attrs& a) -> TypeP {
    const auto names = split_names(string_or(a, "metrics", ""));
    if (in.size() != names.size() + 1)
      throw lang::InternalError("log_epoch: " + std::to_string(in.size() - 1) + " values for " +
                                std::to_string(names.size()) + " names");
    check_metric_type(in[0], "log_epoch", "the epoch");
    for (size_t i = 0; i < names.size(); ++i) check_metric_type(in[i + 1], "log_epoch", names[i]);
    return Type::unit();
  };
  log.eval = [](const std::vector<Value>& in, const Attrs& a) -> Value {
    const auto names = split_names(string_or(a, "metrics", ""));
    std::vector<double> values;
    for (size_t i = 0; i < names.size(); ++i) values.push_back(metric(in.at(i + 1), "log_epoch", names[i]));
    const std::string line = Recorder::instance().log_epoch(metric(in.at(0), "log_epoch", "the epoch"), names, values);
    out() << line << '\n' << std::flush;
    return unit();
  };
  r.add(std::move(log));

  Primitive curves = row("save_curves", "save_curves(prefix): write the logged epochs as prefix.csv and prefix.svg",
                         {attr("prefix", AttrKind::String)}, true);
  curves.infer = [](const std::vector<TypeP>&, const Attrs&) -> TypeP { return Type::unit(); };
  curves.eval = [](const std::vector<Value>&, const Attrs& a) -> Value {
    Recorder::instance().save_curves(a.get_string("prefix"));
    return unit();
  };
  r.add(std::move(curves));
}

}  // namespace

void set_output_stream(std::ostream* os) { g_out = os; }

void register_primitives(sem::Registry& r) {
  static std::once_flag once;
  std::call_once(once, [&] {
    add_fashion_mnist(r);
    add_batches(r);
    add_idx(r);
    add_npy(r);
    add_checkpoints(r);
    add_reports(r);
  });
}

}  // namespace spora::runtime::data
