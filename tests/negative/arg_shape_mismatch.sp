def f(x: f32[B, 784]) -> f32[B] = sum(x, axis=1)

def main() {
    # expected-error@+1: argument 'x' of 'f' must be f32[B,784] but is f32[2,3] (dimension 1 is 3, expected 784)
    print(f(ones(shape=(2, 3))))
}
