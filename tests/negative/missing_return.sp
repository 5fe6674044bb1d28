# expected-error@+1: missing return in 'f'
def f(x: f32) -> f32 {
    let y = x * 2.0
}

def main() {
    print(f(1.0))
}
