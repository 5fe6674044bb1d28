# eager mode runs a loop over static bounds at compile time: an index that would step past
# the 64-bit range ends it there too
# RUN: run --mode eager
def main() {
    var n = 0
    for i in range(9223372036854774000, 9223372036854775807, 1000) {
        n += 1
    }
    for i in range(-9223372036854774000, -9223372036854775807 - 1, -1000) {
        n += 10
    }
    print(n)
}
# CHECK: 22
