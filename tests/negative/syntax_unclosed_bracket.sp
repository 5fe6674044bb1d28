# an unclosed '[' is noticed where the next statement starts
def main() {
    let a = [1.0, 2.0
    # expected-error@+1: expected ',' or ']' but found 'print'
    print(a)
}
