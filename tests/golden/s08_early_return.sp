# a return inside a run-time if: the rest of the function is the other branch
def relu_scalar(x: f32) -> f32 {
    if x < 0.0 {
        return 0.0
    }
    let y = x * 3.0
    return y
}

def main() {
    print(relu_scalar(-2.0), relu_scalar(2.0))
}
# CHECK: 0.0 6.0
