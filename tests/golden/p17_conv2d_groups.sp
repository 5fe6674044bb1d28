# conv2d with groups and dilation
def main() {
    let x = ones(shape=(1, 2, 3, 3))
    let w = ones(shape=(2, 1, 2, 2))
    print(conv2d(x, w, groups=2).shape)
    print(sum(conv2d(x, w, groups=2)))
    print(conv2d(x, ones(shape=(1, 2, 2, 2)), dilation=2))
}
# CHECK: (1, 2, 2, 2)
# CHECK-NEXT: 32.0
# CHECK-NEXT: [[[[8.0]]]]
