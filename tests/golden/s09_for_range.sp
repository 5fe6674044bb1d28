# for over range(stop), range(start, stop), range(start, stop, step), negative steps
def main() {
    var a = 0
    for i in range(5) {
        a = a + i
    }
    var b = 0
    for i in range(2, 6) {
        b = b + i
    }
    var c = 0
    for i in range(10, 0, -3) {
        c = c * 10 + i
    }
    print(a, b, c)
}
# CHECK: 10 14 10741
