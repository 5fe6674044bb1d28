# W2's MLP (benchmarks/sim/w2_mlp.sp: 784-512-512-10, ReLU, cross-entropy, one SGD step) with
# Megatron-LM's tensor parallelism written in the program (semi-auto
# parallelism): `shard=` gives each input of a matmul its partition numbers (MindSpore's
# convention), `shard(x, ...)` pins one tensor. Layer 1 is column-parallel (its weight cut along
# the outputs), layer 2 row-parallel (its weight cut along the inputs, its input cut alike); the
# rest (biases, gradients, the batch) is left to sharding propagation:
#
#   spora search examples/megatron_mlp.sp -c examples/clusters/dgx-a100.yaml --mesh 4 --algo propagate
#   spora run examples/megatron_mlp.sp --mesh 4 --ranks 4 --steps 3
#   spora run examples/megatron_mlp.sp --ranks 1 --steps 3      # the single-device reference
#
# On a 1-D mesh of 4 the propagated strategy is examples/strategies/tp4.json's layouts: one
# all-reduce per step, of layer 2's [64, 512] output (the backward needs none: the gradient of
# layer 1's input is never used). One device runs the hints as identities; they stay in the IR:
# `spora ir examples/megatron_mlp.sp --stage typed`.
import std.nn

let batch = 64

model MLP() {
    param l1 = Dense(784, 512)
    param l2 = Dense(512, 512)
    param l3 = Dense(512, 10)
    def forward(x) {
        let h1 = relu(matmul(shard(x, (1, 1)), l1.w, shard=(none, (1, 4))) + l1.b)
        let h2 = matmul(h1, l2.w, shard=((1, 4), (4, 1))) + l2.b
        return l3(relu(h2))
    }
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(seed=0)
    let x = normal(shape=(batch, 784), seed=1)
    let y = cast(uniform(0.0, 10.0, shape=(batch,), seed=2), i32)
    let (l, g) = value_and_grad(loss)(net, x, y)
    net = tree_map(fn (p, d) => p - 0.01 * d, net, g)
    print("loss", l)
}
