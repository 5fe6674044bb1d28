def f(x, scale = 1.0) = x * scale

def main() {
    # expected-error@+1: 'f' has no parameter named 'scal'
    print(f(1.0, scal=2.0))
}
