// Internal primitives the front end emits: print and assert (effectful), identity and
// stop_gradient, and the names of the structured control-flow primitives (if, while, for_range,
// for_each: see semantics/ir/ir.h), whose rows have no params, shape rule or kernel because
// the type checker and the interpreter handle them.
//
// print(xs...) writes format_value of each input separated by single spaces and ends the line,
// on print_stream() (std::cout unless set_print_stream was called). It returns ().
// assert(cond, message="") needs a bool tensor; when some element is false it raises the user
// error `assertion failed: <message>` (or just `assertion failed`). It returns ().
#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "ops/ops.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params) {
  Primitive p;
  p.name = std::move(name);
  p.family = "internal";
  p.doc = std::move(doc);
  p.params = std::move(params);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  return p;
}

void add_print(sem::Registry& r) {
  Primitive p = row("print", "print(xs...): write the values, space-separated, and a newline",
                    {input_list("xs")});
  p.effectful = true;
  p.differentiable = false;
  p.infer = [](const std::vector<TypeP>&, const Attrs&) -> TypeP { return Type::unit(); };
  p.eval = [](const std::vector<Value>& in, const Attrs&) -> Value {
    std::string line;
    for (size_t i = 0; i < in.size(); ++i) {
      if (i) line += ' ';
      line += sem::format_value(in[i]);
    }
    line += '\n';
    print_stream() << line << std::flush;
    return unit_value();
  };
  r.add(std::move(p));
}

void add_assert(sem::Registry& r) {
  Primitive p =
      row("assert", "assert(cond, message): fail with `assertion failed: message` if false",
          {input("cond"), attr("message", ParamSpec::AttrKind::String, Attr{std::string()})});
  p.effectful = true;
  p.differentiable = false;
  p.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 1, 1, "assert");
    const Type& t = tensor_input(in, 0, "assert");
    if (t.dtype != DType::boolean) user_error("assert condition must be bool, got " + t.str());
    return Type::unit();
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& c = in.at(0).tensor;
    for (int64_t i = 0; i < c.numel(); ++i) {
      if (!c.data<uint8_t>()[i]) {
        std::string msg = attrs.has("message") ? attrs.get_string("message") : "";
        user_error(msg.empty() ? "assertion failed" : "assertion failed: " + msg);
      }
    }
    return unit_value();
  };
  r.add(std::move(p));
}

void add_identity(sem::Registry& r, const std::string& name, const std::string& doc, bool diff) {
  Primitive p = row(name, doc, {input("x")});
  p.differentiable = diff;
  p.facets[passes::kFusionFacet] = passes::FusionKind::Elementwise;
  p.infer = [name](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 1, 1, name);
    return in[0];
  };
  p.eval = [](const std::vector<Value>& in, const Attrs&) -> Value { return in.at(0); };
  // identity passes derivatives through; stop_gradient is not differentiable (no rules).
  if (diff)
    ad::set_linear_rules(
        p, [](ad::Emitter&, const ad::Node&, ad::Node*, ad::Node* dout) { return dout; });
  r.add(std::move(p));
}

// grad_check(err, label): records the relative error of one derivative check (emitted by the
// lowering under `spora grad-check`); the driver reads them with grad_check_results().
void add_grad_check(sem::Registry& r) {
  Primitive p = row("grad_check", "grad_check(err, label): record a derivative check's relative error",
                    {input("err"), attr("label", ParamSpec::AttrKind::String, Attr{std::string()})});
  p.effectful = true;
  p.differentiable = false;
  p.infer = [](const std::vector<TypeP>& in, const Attrs&) -> TypeP {
    expect_inputs(in, 1, 1, "grad_check");
    tensor_input(in, 0, "grad_check");
    return Type::unit();
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    grad_check_results().emplace_back(attrs.get_string("label"), in.at(0).tensor.item());
    return unit_value();
  };
  r.add(std::move(p));
}

void add_control_flow(sem::Registry& r, const std::string& name, const std::string& doc) {
  Primitive p = row(name, doc, {});
  p.family = "control";
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

void internal_costs(sem::Registry& r) {
  for (const char* name : {"print", "assert", "grad_check"}) set_cost(r, name, sem::host_cost());
  for (const char* name : {"identity", "stop_gradient"}) set_cost(r, name, sem::view_cost());
}

void internal_rules(sem::Registry& r) {
  for (const char* name : {"print", "assert", "grad_check"})
    set_sharding(r, name, replicated_only_rule("an effect on the host: it sees whole values"));
  for (const char* name : {"identity", "stop_gradient"})
    set_sharding(r, name, dim_rule(linear(elementwise_spec, kJoint)));
  for (const char* name : {"if", "while", "for_range", "for_each"})
    set_sharding(r, name,
                 replicated_only_rule("control flow: the partitioner partitions the bodies"));
}

}  // namespace facets

}  // namespace

void register_internal(sem::Registry& r) {
  add_print(r);
  add_assert(r);
  add_identity(r, "identity", "identity(x): x unchanged", true);
  add_identity(r, "stop_gradient", "stop_gradient(x): x, with a zero derivative", false);
  add_grad_check(r);
  add_control_flow(r, "if", "if(c, @then, @else): structured conditional (run by the interpreter)");
  add_control_flow(r, "while",
                   "while(@cond, @body, state...): structured loop (run by the interpreter)");
  add_control_flow(
      r, "for_range",
      "for_range(start, stop, step, @body, state...): counted loop (run by the interpreter)");
  add_control_flow(
      r, "for_each",
      "for_each(iter, @body, state...): loop over an iterator (run by the interpreter)");
  // Cost and sharding rules of the rows above.
  facets::internal_costs(r);
  facets::internal_rules(r);
}

std::vector<std::pair<std::string, double>>& grad_check_results() {
  static std::vector<std::pair<std::string, double>> results;
  return results;
}

}  // namespace spora::ops
