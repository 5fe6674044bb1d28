# parameters with defaults come last
# expected-error@+1: parameter 'b' has no default but follows parameter 'a' which has one
def f(a = 1.0, b) = a + b

def main() {
    print(f(1.0, 2.0))
}
