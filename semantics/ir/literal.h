// Typing the untyped literals of the IR text (lexer.h): a constant's value from its written
// type, an attribute's value from the primitive's ParamSpec.
//
//   tensor    nested lists whose nesting is the shape (a scalar is a bare element); floats are
//             read in the tensor's own precision (bit-exact for what the printer writes; also
//             `inf`, `-inf`, `nan`); i32/i64 must fit; bool elements are true/false
//   str       a string literal
//   tuple / record   `(v, ...)` with one literal per element type
//   attribute by ParamSpec::AttrKind: Int, Float (ints accepted), Bool, String, Ints `[1,2]`,
//             IntsOrNone / IntOrNone (`none` too), DType (`f32`), Any (by the literal's form);
//             an attribute the primitive's parameters do not declare is an error, unless the
//             primitive declares no parameters at all (then it is read as Any)
#pragma once

#include <string>

#include "semantics/ir/lexer.h"
#include "semantics/registry.h"
#include "semantics/value.h"

namespace spora::ir::text {

// Throws ParseError at the literal (or the offending element).
sem::Value literal_value(const Lit& lit, const sem::TypeP& type);
sem::Attr attr_value(const sem::Primitive& prim, const std::string& name, const Lit& lit,
                     lang::SourceRange name_range);

}  // namespace spora::ir::text
