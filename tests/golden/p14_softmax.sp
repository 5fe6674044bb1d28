# softmax and log_softmax along an axis
def main() {
    print(softmax([0.0, 0.0, 0.0, 0.0]))
    print(softmax([[1.0, 1.0], [2.0, 2.0]], axis=0))
    print(log_softmax([0.0, 0.0]))
}
# CHECK: [0.25, 0.25, 0.25, 0.25]
# CHECK-NEXT: [[0.26894143, 0.26894143], [0.7310586, 0.7310586]]
# CHECK-NEXT: [-0.6931472, -0.6931472]
