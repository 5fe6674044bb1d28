# A data-parallel training loop that runs until it is stopped: the fault test kills one of its
# ranks mid-run (kill_test.sh).
def loss(w, x, y) = cross_entropy(x @ w, y)

def main() {
    var w = zeros(shape=(784, 10))
    for epoch in range(100000) {
        for (x, y) in fashion_mnist("train", batch=64, flatten=true, limit=256) {
            let (l, g) = value_and_grad(loss)(w, x, y)
            w = w - 0.1 * g
        }
        print("epoch", epoch)
    }
}
