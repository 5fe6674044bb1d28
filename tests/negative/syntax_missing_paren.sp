# a missing ',' between arguments reads as a missing ')'
def main() {
    let a = [1.0, 2.0]
    # expected-error@+1: expected ')' but found 'a'
    print(max(a a))
}
