// The primitive registry: one row per primitive, holding everything every layer needs to know
// about it.
//
// semantics/ owns the table and the facet types it needs itself (signature, shape rule,
// reference kernel). Later layers define their own facet types (derivative rules, fusion kind,
// cost, sharding rule, backend kernels) and store them type-erased in `facets` under a
// well-known key; they never include ops/. ops/ fills the rows (one file per family) and is
// linked into the final programs: call spora::ops::register_all() once at start-up.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "semantics/types.h"
#include "semantics/value.h"

namespace spora::sem {

// A static attribute of a primitive application (an axis, a shape, a flag, a seed...).
// Ints are int64, int lists vector<int64>. monostate means `none`.
using Attr = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>,
                          DType>;
std::string attr_str(const Attr& a);  // none, true, 3, 1.5, "s", [1,2], f32

// Attributes in a fixed order (the order of the primitive's signature), so printing is stable.
class Attrs {
 public:
  void set(std::string name, Attr value);
  bool has(std::string_view name) const;
  const Attr* find(std::string_view name) const;
  // Typed getters; throw lang::InternalError when missing or of another type.
  int64_t get_int(std::string_view name) const;
  double get_float(std::string_view name) const;  // accepts ints too
  bool get_bool(std::string_view name) const;
  const std::string& get_string(std::string_view name) const;
  const std::vector<int64_t>& get_ints(std::string_view name) const;
  DType get_dtype(std::string_view name) const;
  bool is_none(std::string_view name) const;  // missing or monostate
  const std::vector<std::pair<std::string, Attr>>& items() const { return items_; }
  bool empty() const { return items_.empty(); }
  friend bool operator==(const Attrs& a, const Attrs& b) { return a.items_ == b.items_; }

 private:
  std::vector<std::pair<std::string, Attr>> items_;
};

// How a call's arguments bind to a primitive: each parameter is a tensor input, a variadic
// list of tensor inputs (given as one tuple argument: `concat((a, b), axis=0)`), or a static
// attribute with an optional default. Positional arguments bind in order, then keywords.
// Two kinds serve effectful and I/O primitives: Value, one input of any run-time type (a
// model, a tuple: `save(net, "mlp.ckpt")`), and Kwargs (last in the signature, attr_kind
// String): every keyword argument no other parameter takes becomes one more input, and the
// names go, comma-separated, to the string attribute named like the parameter
// (`log_epoch(e, test_loss=l, test_acc=a)` -> inputs (e, l, a), metrics="test_loss,test_acc").
struct ParamSpec {
  enum class Kind { Input, OptionalInput, InputList, Attr, Value, Kwargs };
  // What an Attr parameter accepts (the front end converts and checks the argument):
  enum class AttrKind { Int, Float, Bool, String, Ints, IntsOrNone, IntOrNone, DType, Any };
  std::string name;
  Kind kind = Kind::Input;
  AttrKind attr_kind = AttrKind::Int;
  std::optional<Attr> default_value;  // Attr only; nullopt = required
  // Attr with a default: false leaves it out of a call's attributes when the call does not give
  // it (a flag whose absence means its default, as matmul's transpose_a), so the IR of calls
  // that do not use it does not show it.
  bool default_written = true;
};

// A shape/type rule: the output type from the input types and attributes. Throws
// lang::UserError with a lowercase message naming the actual shapes when they do not fit
// ("matmul shapes do not match: f32[64,784] @ f32[512,10]").
using ShapeRule = std::function<TypeP(const std::vector<TypeP>& inputs, const Attrs& attrs)>;

// The reference kernel: plain, obviously correct, for f32, f64, i32, i64, bool. Throws
// lang::UserError for data-dependent errors (index out of range).
using RefKernel = std::function<Value(const std::vector<Value>& inputs, const Attrs& attrs)>;

struct Primitive {
  std::string name;
  std::string family;           // "elementwise", "reduction", "matmul", ... (the ops/ file)
  std::string doc;              // one line, for `spora ops` and error hints
  std::vector<ParamSpec> params;
  ShapeRule infer;
  RefKernel eval;               // null for control-flow primitives (the interpreter runs them)
  bool effectful = false;       // print, assert, save: never removed or reordered
  bool differentiable = true;   // false: integer/boolean results, random, comparisons
  // Facets of later layers, keyed by the name their layer documents ("vjp", "jvp", "fusion",
  // "cost", "sharding", "kernel.cpu", "kernel.cuda").
  std::map<std::string, std::any> facets;

  template <class T> const T* facet(const std::string& key) const {
    auto it = facets.find(key);
    return it == facets.end() ? nullptr : std::any_cast<T>(&it->second);
  }
};

// Which kernels run primitives. Reference: the plain kernels of `eval` (the oracle tests compare
// against). Cpu: a row's "kernel.cpu" facet (a RefKernel, registered by backends/cpu) where it
// has one, else `eval`. Cuda: a row's "kernel.cuda" facet (backends/cuda: a CUDA kernel, or its
// host fallback), else as Cpu. The interpreter and eager mode call kernel_for(); the
// process-wide choice is made once at start-up (`spora run` uses Cpu; test oracles use
// Reference).
enum class Backend { Reference, Cpu, Cuda };
void set_backend(Backend b);
Backend backend();
inline constexpr const char* kCpuKernelFacet = "kernel.cpu";
inline constexpr const char* kCudaKernelFacet = "kernel.cuda";
// The kernel the current backend runs `p` with (null for control flow).
const RefKernel& kernel_for(const Primitive& p);

class Registry {
 public:
  static Registry& instance();
  // Adds a row; throws lang::InternalError if the name is taken.
  Primitive& add(Primitive p);
  const Primitive* find(std::string_view name) const;
  Primitive* find_mutable(std::string_view name);
  std::vector<const Primitive*> all() const;  // sorted by name

 private:
  std::map<std::string, Primitive, std::less<>> rows_;
};

}  // namespace spora::sem
