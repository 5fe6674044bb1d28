def f(x: f32[N]) -> f32[N] {
    # expected-error@+1: the result of 'f' must be f32[N] but is f32
    return sum(x)
}

def main() {
    print(f([1.0, 2.0]))
}
