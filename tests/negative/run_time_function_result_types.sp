# The candidates of a function chosen at run time must return one type.
def main() {
    let c = sum([1.0, 2.0])
    let f = (fn (x) => x * 2.0) if c > 1.0 else (fn (x) => (x, x))
    # expected-error@+1: this call runs a function chosen at run time, and its candidates return different types: f32 and a tuple of 2 elements
    print(f(4.0))
}
