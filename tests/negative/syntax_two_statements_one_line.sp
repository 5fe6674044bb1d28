# statements on one line need a ';' between them
def main() {
    # expected-error@+1: expected end of line or '}' but found 'let'
    let a = 1.0 let b = 2.0
    print(a)
}
