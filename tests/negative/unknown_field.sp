model M() {
    param w: f32[2] = ones()
}

def main() {
    let m = M()
    # expected-error@+1: has no field 'v'
    print(m.v)
}
