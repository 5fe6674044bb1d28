# A deep MLP whose activations outweigh its parameters and data (2048 rows of 16 features, two
# blocks of two 256-wide tanh layers), for recomputation under the distributed runtime:
# `--recompute all` (each block's forward run again in the backward pass) must print the same
# losses and save the same checkpoint as without it, with a lower peak.
import std.nn
import std.optim

model Block(n: int = 256) {
    param a = Dense(n, n)
    param b = Dense(n, n)
    def forward(x) = tanh(b(tanh(a(x))))
}

model Deep(hidden: int = 256) {
    param inp = Dense(16, hidden)
    param b1 = Block(hidden)
    param b2 = Block(hidden)
    param out = Dense(hidden, 1)
    def forward(x) = out(b2(b1(inp(x))))
}

def loss(net: Deep, x, y) = mean((net(x) - y) ** 2.0)

def main() {
    var net = Deep(hidden=256, seed=0)
    let x = normal(0.0, 1.0, shape=[2048, 16], seed=1)
    let y = sum(sin(x), axis=1, keepdims=true)
    let opt = sgd(lr=0.01, momentum=0.9)
    var state = opt.init(net)
    for step in range(4) {
        let (l, g) = value_and_grad(loss)(net, x, y)
        (net, state) = opt.update(net, g, state)
        print("step", step, "loss", l)
    }
    save(net, "deep.ckpt")
}
