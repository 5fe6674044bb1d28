# argmax / argmin and a stable logsumexp
def main() {
    let x = [[1.0, 5.0, 3.0], [7.0, 0.0, 2.0]]
    print(argmax(x, axis=1), argmin(x, axis=1), argmax(x))
    print(logsumexp([0.0, 0.0]))
    print(logsumexp([1000.0, 1000.0]))
}
# CHECK: [1, 0] [0, 1] 3
# CHECK-NEXT: 0.6931472
# CHECK-NEXT: 1000.6932
