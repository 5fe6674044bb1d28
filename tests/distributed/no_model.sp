# A training loop without a model: its parameter is a bare tensor, so ZeRO has no model record
# to shard (distributed_error_zero_no_record).
def loss(w: f64[8, 4], x) = sum(x @ w)

def main() {
    var w = normal(shape=(8, 4), seed=0, dtype=f64) * 0.05
    for i in range(3) {
        let (l, g) = value_and_grad(loss)(w, ones(shape=[2, 8], dtype=f64))
        w = w - 0.1 * g
        print(l)
    }
}
