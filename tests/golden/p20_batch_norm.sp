# batch_norm in inference (running statistics) and training (batch statistics) mode
def main() {
    let x = [[1.0], [3.0]]
    let y = batch_norm(x, [1.0], [0.0], [1.0], [4.0], eps=0.0)
    print(y)
    let (yt, rm, rv) = batch_norm(x, [1.0], [0.0], [0.0], [1.0], training=true, eps=0.0)
    print(yt)
    print(rm, rv)
}
# CHECK: [[0.0], [1.0]]
# CHECK-NEXT: [[-1.0], [1.0]]
# CHECK-NEXT: [0.2] [1.1]
