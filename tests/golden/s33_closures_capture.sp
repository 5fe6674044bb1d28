# closures capture values, including run-time tensors and other closures
def make_counter_step(step) = fn (x) => x + step

def compose(f, g) = fn (x) => f(g(x))

def main() {
    let base = [1.0, 2.0] * 2.0
    let add_base = fn (x) => x + base
    let inc = make_counter_step(1.0)
    let h = compose(add_base, compose(inc, inc))
    print(h([0.0, 0.0]))
}
# CHECK: [4.0, 6.0]
