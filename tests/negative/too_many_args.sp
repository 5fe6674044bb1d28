def f(x) = x

def main() {
    # expected-error@+1: 'f' takes 1 argument but 2 were given
    print(f(1.0, 2.0))
}
