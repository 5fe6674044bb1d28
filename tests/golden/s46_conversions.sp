# int, float and bool convert a compile-time number or a tensor; `bool` is also the dtype as a
# value (`cast(x, bool)`, `x.dtype == bool`), and called it converts, as int and float do.
def main() {
    let x = [0.0, 2.0]
    print(bool(x), cast(x, bool), bool(0), bool(2.5))
    print(int(3.7), float(2), int([1.5, -2.5]))
    print(cast(x, bool).dtype == bool, x.dtype == f32)
    print(none, x.dtype, cast(x, i32).dtype)   # none and dtypes print as their names
}
# CHECK: [false, true] [false, true] false true
# CHECK: 3 2.0 [1, -2]
# CHECK: true true
# CHECK: none f32 i32
