# A function whose annotations have a symbolic dimension is probed quietly by `spora check`:
# only the real error is reported and counted.
def dot(x: f32[N], y: f32[N]) = sum(x * y)

def main() {
    # expected-error@+1: argument 'y' of 'dot' must be f32[N] but is f32[3] (dimension 0 is 3, expected 2)
    print(dot([1.0, 2.0], [1.0, 2.0, 3.0]))
}
