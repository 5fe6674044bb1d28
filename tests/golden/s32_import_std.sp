# importing a standard-library module: qualified and unqualified names
import std.nn

def main() {
    let layer = nn.Dense(3, 2, seed=1)
    let y = layer([[1.0, 2.0, 3.0]])
    print(y.shape)
    print(sum(nn.relu6([-1.0, 3.0, 9.0])))
}
# CHECK: (1, 2)
# CHECK-NEXT: 9.0
