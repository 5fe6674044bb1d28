model M(n: int) {
    param w: f32[n] = ones()
}

def main() {
    # expected-error@+1: argument 'n' of model 'M' must be an int but is the number 2.5
    let m = M(2.5)
    print(m.w)
}
