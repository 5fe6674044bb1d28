# expected-error@+1: unknown type 'Foo'
def f(m: Foo) = m

def main() {
    print(f(1))
}
