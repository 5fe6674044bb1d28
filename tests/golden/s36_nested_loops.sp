# nested run-time loops with carried state at both levels
def main() {
    var total = 0
    var rows = 0
    for i in range(3) {
        for j in range(4) {
            total = total + i * j
        }
        rows = rows + 1
    }
    print(total, rows)
}
# CHECK: 18 3
