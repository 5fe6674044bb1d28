# cross_entropy with integer labels: mean (default), sum and none reductions
def main() {
    let logits = [[0.0, 0.0], [0.0, 0.0]]
    print(cross_entropy(logits, [0, 1]))
    print(cross_entropy(logits, [0, 1], reduction="sum"))
    print(cross_entropy(logits, [0, 1], reduction="none"))
}
# CHECK: 0.6931472
# CHECK-NEXT: 1.3862944
# CHECK-NEXT: [0.6931472, 0.6931472]
