def f(x, y) = x + y

def main() {
    # expected-error@+1: missing argument 'y' in call to 'f'
    print(f(1.0))
}
