# A function chosen by a run-time condition meets only functions.
def halve(x) = x * 0.5

def main() {
    let c = sum([1.0, 2.0])
    # expected-error@+1: this conditional expression chooses between the function 'halve' and f32 by a run-time condition
    let f = halve if c > 1.0 else 2.0
    print(f(4.0))
}
