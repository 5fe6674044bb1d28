// The primitive registry and static attributes (registry.h).
#include "semantics/registry.h"

#include <atomic>

#include "lang/diagnostics.h"

namespace spora::sem {

std::string attr_str(const Attr& a) {
  struct Printer {
    std::string operator()(std::monostate) const { return "none"; }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_float(d, false); }
    std::string operator()(const std::string& s) const {
      std::string out = "\"";
      for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
          out += "\\n";
          continue;
        }
        out += c;
      }
      return out + "\"";
    }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string out = "[";
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ",";
        out += std::to_string(v[i]);
      }
      return out + "]";
    }
    std::string operator()(DType t) const { return std::string(dtype_name(t)); }
  };
  return std::visit(Printer{}, a);
}

void Attrs::set(std::string name, Attr value) {
  for (auto& [n, v] : items_) {
    if (n == name) {
      v = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(name), std::move(value));
}

const Attr* Attrs::find(std::string_view name) const {
  for (const auto& [n, v] : items_)
    if (n == name) return &v;
  return nullptr;
}

bool Attrs::has(std::string_view name) const { return find(name) != nullptr; }

namespace {
template <class T>
const T& get_as(const Attrs& attrs, std::string_view name, const char* what) {
  const Attr* a = attrs.find(name);
  if (!a) throw lang::InternalError("attribute '" + std::string(name) + "' is missing");
  const T* v = std::get_if<T>(a);
  if (!v)
    throw lang::InternalError("attribute '" + std::string(name) + "' is " + attr_str(*a) +
                              ", not " + what);
  return *v;
}
}  // namespace

int64_t Attrs::get_int(std::string_view name) const {
  const Attr* a = find(name);
  if (a) {
    if (auto* b = std::get_if<bool>(a)) return *b ? 1 : 0;
  }
  return get_as<int64_t>(*this, name, "an int");
}

double Attrs::get_float(std::string_view name) const {
  const Attr* a = find(name);
  if (a) {
    if (auto* i = std::get_if<int64_t>(a)) return static_cast<double>(*i);
  }
  return get_as<double>(*this, name, "a float");
}

bool Attrs::get_bool(std::string_view name) const { return get_as<bool>(*this, name, "a bool"); }

const std::string& Attrs::get_string(std::string_view name) const {
  return get_as<std::string>(*this, name, "a string");
}

const std::vector<int64_t>& Attrs::get_ints(std::string_view name) const {
  return get_as<std::vector<int64_t>>(*this, name, "an int list");
}

DType Attrs::get_dtype(std::string_view name) const {
  return get_as<DType>(*this, name, "a dtype");
}

bool Attrs::is_none(std::string_view name) const {
  const Attr* a = find(name);
  return !a || std::holds_alternative<std::monostate>(*a);
}

namespace {
std::atomic<Backend> g_backend{Backend::Reference};
}

void set_backend(Backend b) { g_backend.store(b, std::memory_order_relaxed); }
Backend backend() { return g_backend.load(std::memory_order_relaxed); }

const RefKernel& kernel_for(const Primitive& p) {
  const Backend b = g_backend.load(std::memory_order_relaxed);
  if (b == Backend::Cuda) {
    if (const RefKernel* k = p.facet<RefKernel>(kCudaKernelFacet)) return *k;
  }
  if (b != Backend::Reference) {
    if (const RefKernel* k = p.facet<RefKernel>(kCpuKernelFacet)) return *k;
  }
  return p.eval;
}

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

Primitive& Registry::add(Primitive p) {
  if (p.name.empty()) throw lang::InternalError("Registry::add: a primitive needs a name");
  std::string name = p.name;
  auto [it, inserted] = rows_.emplace(std::move(name), std::move(p));
  if (!inserted)
    throw lang::InternalError("Registry::add: primitive '" + it->first + "' is already registered");
  return it->second;
}

const Primitive* Registry::find(std::string_view name) const {
  auto it = rows_.find(name);
  return it == rows_.end() ? nullptr : &it->second;
}

Primitive* Registry::find_mutable(std::string_view name) {
  auto it = rows_.find(name);
  return it == rows_.end() ? nullptr : &it->second;
}

std::vector<const Primitive*> Registry::all() const {
  std::vector<const Primitive*> out;
  out.reserve(rows_.size());
  for (const auto& [name, p] : rows_) out.push_back(&p);
  return out;
}

}  // namespace spora::sem
