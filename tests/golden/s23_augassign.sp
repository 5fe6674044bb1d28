# augmented assignment on vars
def main() {
    var x = 10
    x += 5
    x -= 3
    x *= 2
    var y = [1.0, 2.0]
    y /= 2.0
    print(x, y)
}
# CHECK: 24 [0.5, 1.0]
