def f(x) = x

# expected-error@+1: 'f' is already defined
def f(x) = x * 2

def main() {
    print(f(1))
}
