# A tiny MLP for the training-step tests (tests/sim/train_step_test.cpp): 4 -> 8 -> 3, ReLU,
# cross-entropy, `batch` examples per rank.
let batch = 2

model MLP() {
    param w1: f32[4, 8] = normal(0.0, 0.1)
    param b1: f32[8] = zeros()
    param w2: f32[8, 3] = normal(0.0, 0.1)
    param b2: f32[3] = zeros()
    def forward(x) = relu(x @ w1 + b1) @ w2 + b2
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    let net = MLP()
    let x = normal(shape=(batch, 4), seed=1)
    let y = cast(uniform(0.0, 3.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    print(l)
}
