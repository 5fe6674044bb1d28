# RUN: run --mode eager
# eager mode over the real dataset: the output of d03_fashion.sp (graph mode), line for line.
def main() {
    var labels = 0
    var n = 0
    for (x, y) in fashion_mnist("test", batch=64, limit=200) {
        print(shape(x), shape(y))
        labels = labels + sum(y)
        n = n + len(y)
    }
    print("examples", n, "label sum", labels)
    for (x, y) in fashion_mnist("test", batch=1, limit=1) {
        print("first test label", y)
    }
    for (x, y) in fashion_mnist("train", batch=1, limit=1, flatten=true) {
        print(shape(x), "first train label", y)
    }
}
# CHECK: (64, 1, 28, 28) (64,)
# CHECK-NEXT: (64, 1, 28, 28) (64,)
# CHECK-NEXT: (64, 1, 28, 28) (64,)
# CHECK-NEXT: (8, 1, 28, 28) (8,)
# CHECK-NEXT: examples 200 label sum 838
# CHECK-NEXT: first test label [9]
# CHECK-NEXT: (1, 784) first train label [9]
