# else belongs to an if, on the same line as its closing brace or the next
def main() {
    let a = 1.0
    print(a)
    # expected-error@+1: expected a statement or '}' but found 'else'
    else { print(2.0) }
}
