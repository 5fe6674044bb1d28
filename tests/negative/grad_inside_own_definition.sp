# grad(net) inside net's own body: the derivative would contain the derivative of itself.
def net(w: f32, x: f32) -> f32 {
    # expected-error@+1: cannot differentiate 'net' inside its own definition
    let g = grad(net)(w, x)
    return w * x + g
}

def main() {
    print(net(1.0, 2.0))
}
