# RUN: run --mode eager
# eager mode pulls the batches one at a time and runs the body op by op: the output of
# d01_batches.sp (graph mode), line for line.
def main() {
    let x = reshape(cast(arange(20), f32), (10, 2))
    let y = arange(10)
    var total = 0.0
    var count = 0
    for (xb, yb) in batches(x, y, batch=4) {
        print(shape(xb), yb)
        total = total + sum(xb)
        count = count + 1
    }
    print("sum", total, "batches", count)
    for epoch in range(2) {
        var seen = 0
        for (xb, yb) in batches(x, y, batch=4, shuffle=true, seed=1) {
            print("epoch", epoch, yb)
            seen = seen + sum(yb)
        }
        print("epoch", epoch, "label sum", seen)
    }
    for epoch in range(2) {
        for (xb, yb) in batches(x, y, batch=4, drop_last=true) {
            report("loss", sum(xb))
        }
        log_epoch(epoch + 1, test_acc=0.5)
    }
    # A seed that changes with the epoch: a run-time value in graph mode.
    for epoch in range(2) {
        for (xb, yb) in batches(x, y, batch=5, shuffle=true, seed=epoch + 7) {
            print("seed", epoch + 7, yb)
        }
    }
}
# CHECK: (4, 2) [0, 1, 2, 3]
# CHECK-NEXT: (4, 2) [4, 5, 6, 7]
# CHECK-NEXT: (2, 2) [8, 9]
# CHECK-NEXT: sum 190.0 batches 3
# CHECK-NEXT: epoch 0 [0, 5, 1, 6]
# CHECK-NEXT: epoch 0 [7, 8, 3, 2]
# CHECK-NEXT: epoch 0 [9, 4]
# CHECK-NEXT: epoch 0 label sum 45
# CHECK-NEXT: epoch 1 [3, 8, 6, 7]
# CHECK-NEXT: epoch 1 [4, 0, 9, 1]
# CHECK-NEXT: epoch 1 [2, 5]
# CHECK-NEXT: epoch 1 label sum 45
# CHECK-NEXT: epoch 1  train_loss 60.0000  test_acc 0.5000
# CHECK-NEXT: epoch 2  train_loss 60.0000  test_acc 0.5000
# CHECK-NEXT: seed 7 [6, 2, 4, 0, 8]
# CHECK-NEXT: seed 7 [1, 7, 3, 9, 5]
# CHECK-NEXT: seed 8 [8, 9, 2, 0, 7]
# CHECK-NEXT: seed 8 [4, 6, 1, 5, 3]
