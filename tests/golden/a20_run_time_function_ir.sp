# A function chosen at run time, in the typed IR: the if that chooses returns the tag (which
# candidate) and each candidate's captured values (a placeholder for the one not chosen); the
# call is a switch, an if on tag == 0 between the candidates' graphs, named after where each
# lambda is written.
# RUN: ir --stage typed
def main() {
    let c = sum([1.0, 2.0])
    let f = (fn (x) => x * c) if c > 1.0 else (fn (x) => x - 1.0)
    print(f(3.0))
}
# CHECK: graph @main.then() -> (i32, (f32,)) {
# CHECK-NEXT: %4 = constant 0 : i32
# CHECK-NEXT: %5 = make_tuple(%1) : (f32,)
# CHECK: graph @main.else() -> (i32, (f32,)) {
# CHECK-NEXT: %7 = constant 1 : i32
# CHECK-NEXT: %8 = constant 0.0 : f32
# CHECK: %11 = if(%3, @main.then, @main.else) : (i32, (f32,))
# CHECK-NEXT: %12 = tuple_get(%11, index=0) : i32
# CHECK: %16 = eq(%12, %15) : bool
# CHECK-NEXT: graph @main.case_lambda_8_14() -> f32 {
# CHECK-NEXT: %17 = constant 3.0 : f32
# CHECK-NEXT: %18 = mul(%17, %14) : f32
# CHECK: graph @main.case_lambda_8_48() -> f32 {
# CHECK: %20 = if(%16, @main.case_lambda_8_14, @main.case_lambda_8_48) : f32
