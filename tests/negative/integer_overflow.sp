# compile-time integers are 64-bit, like the literals: arithmetic that leaves that range is an
# error, never a silent wrap-around
def main() {
    let big = 9223372036854775807
    # expected-error@+1: integer overflow: 9223372036854775807 + 1 does not fit in 64 bits
    let a = big + 1
    # expected-error@+1: integer overflow: -9223372036854775808 - 1 does not fit in 64 bits
    let b = -9223372036854775808 - 1
    # expected-error@+1: integer overflow: 4294967296 * 4294967296 does not fit in 64 bits
    let c = 4294967296 * 4294967296
    # expected-error@+1: integer overflow: 2 ** 63 does not fit in 64 bits
    let d = 2 ** 63
    # expected-error@+1: integer overflow: -9223372036854775808 // -1 does not fit in 64 bits
    let e = -9223372036854775808 // -1
    # expected-error@+1: integer overflow: -(-9223372036854775808) does not fit in 64 bits
    let f = -(-9223372036854775808)
    var g = big
    # expected-error@+1: integer overflow: 9223372036854775807 * 2 does not fit in 64 bits
    g *= 2
    print(big)
}
