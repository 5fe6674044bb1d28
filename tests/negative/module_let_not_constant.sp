# a module-level let is evaluated at compile time, outside any function: whatever does not
# fold to a compile-time constant is an error where it would need a run-time value
# expected-error@+1: a module-level let must be a compile-time constant (a number, string or tuple of those)
let table = [[1.0, 2.0], [3.0, 4.0]]
# expected-error@+1: a module-level let must be a compile-time constant
let s = sin(1.0)
# expected-error@+1: a module-level let must be a compile-time constant
let ones3 = ones(shape=(3,))
let n = 2 * 3
def main() {
    print(n)
}
