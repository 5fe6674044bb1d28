# let binds a name or a tuple of names
def main() {
    # expected-error@+1: expected a name or '(' but found '='
    let = 3.0
}
