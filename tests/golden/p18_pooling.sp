# max_pool2d and avg_pool2d (stride defaults to the kernel)
def main() {
    let x = reshape(arange(0, 16, dtype=f32), (1, 1, 4, 4))
    print(max_pool2d(x, kernel=2))
    print(avg_pool2d(x, kernel=2))
    print(max_pool2d(x, kernel=3, stride=1))
}
# CHECK: [[[[5.0, 7.0], [13.0, 15.0]]]]
# CHECK-NEXT: [[[[2.5, 4.5], [10.5, 12.5]]]]
# CHECK-NEXT: [[[[10.0, 11.0], [14.0, 15.0]]]]
