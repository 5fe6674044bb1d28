# let binds once, var can be reassigned; blocks scope their lets
def main() {
    let x = 3
    var y = x + 1
    y = y * 2
    var t = [1.0, 2.0]
    t = t + 1.0
    print(x, y)
    print(t)
}
# CHECK: 3 8
# CHECK-NEXT: [2.0, 3.0]
