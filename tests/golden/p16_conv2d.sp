# conv2d: NCHW input, OIHW weight, bias, stride and padding
def main() {
    let x = reshape(arange(0, 16, dtype=f32), (1, 1, 4, 4))
    let w = ones(shape=(1, 1, 2, 2))
    print(conv2d(x, w))
    print(conv2d(x, w, [1.0], stride=2))
    print(conv2d(x, w, padding=1).shape)
    print(sum(conv2d(x, w, padding=1)))
}
# CHECK: [[[[10.0, 14.0, 18.0], [26.0, 30.0, 34.0], [42.0, 46.0, 50.0]]]]
# CHECK-NEXT: [[[[11.0, 19.0], [43.0, 51.0]]]]
# CHECK-NEXT: (1, 1, 5, 5)
# CHECK-NEXT: 480.0
