# reshape with a -1 wildcard, flatten, expand_dims / unsqueeze, squeeze
def main() {
    let x = arange(0, 6, dtype=f32)
    print(reshape(x, (2, 3)))
    print(reshape(x, (3, -1)))
    print(flatten(reshape(x, (1, 2, 3))).shape)
    print(expand_dims(x, 0).shape, unsqueeze(x, 1).shape)
    print(squeeze(reshape(x, (1, 6, 1))).shape, squeeze(reshape(x, (1, 6, 1)), axis=0).shape)
}
# CHECK: [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
# CHECK-NEXT: [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
# CHECK-NEXT: (1, 6)
# CHECK-NEXT: (1, 6) (6, 1)
# CHECK-NEXT: (6,) (6, 1)
