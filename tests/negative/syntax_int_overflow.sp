# integer literals are 64-bit
def main() {
    # expected-error@+1: integer literal 99999999999999999999 does not fit in 64 bits
    let big = 99999999999999999999
    print(big)
}
