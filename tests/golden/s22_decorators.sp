# decorators parse and are carried on the graph (@jit here)
@jit
def double(x: f32[N]) -> f32[N] = x * 2.0

def main() {
    print(double([1.0, 2.0]))
}
# CHECK: [2.0, 4.0]
