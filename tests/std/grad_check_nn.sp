# spora grad-check: the gradients of every std.nn layer and std.losses loss (reverse mode)
# against central finite differences and forward mode, in f64. Each f weights the layer's
# output with a fixed random tensor so no derivative cancels by symmetry.
# RUN: grad-check
import std.nn
import std.losses

def proj(y, seed) = sum(y * normal(shape=y.shape, seed=seed, dtype=y.dtype))

def dense(m, x) = proj(m(x), 1)
def conv(m, x) = proj(m(x), 2)
def pools(x) = proj(MaxPool2d(3, stride=2, padding=1)(x), 3) + proj(AvgPool2d(2)(x), 4) + proj(AvgPool2d(3, stride=2, padding=1)(x), 5)
def bn_train(m, x) = proj(m.apply(x, true)[0], 6)
def bn_eval(m, x) = proj(m(x), 7)
def layernorm(m, x) = proj(m(x), 8)
def embedding(m) = proj(m([[1, 2], [2, 0]]), 9)
def dropout(x) = proj(Dropout(0.3, seed=5)(x, true, 17), 10)
def sequential(m, x) = proj(m(x), 11)
def mha(m, x) = proj(m(x, x, x, mask=[[false, true, true], [false, false, true], [false, false, false]]), 12)
def mha_cross(m, q, kv) = proj(m(q, kv, kv), 13)
def block(m, x) = proj(m(x), 14)
def block_train(m, x) = proj(m(x, train=true, step=3), 15)
def activations(x) = proj(relu6(x) + leaky_relu(x) + silu(x) + elu(x) + softplus(x) + gelu_tanh(x), 16)

def ce(l) = cross_entropy(l, [2, 0, 1]) + cross_entropy(l, [2, -100, 1], reduction="sum", label_smoothing=0.2, weight=[1.0, 2.0, 0.5])
def ce_soft(l, t) = cross_entropy(l, softmax(t, axis=-1), label_smoothing=0.1)
def nll_f(lp) = nll_loss(lp, [1, 0, 2], weight=[0.3, 1.0, 2.0])
def regress(p, t) = mse_loss(p, t) + l1_loss(p, t, reduction="sum") + smooth_l1_loss(p, t, beta=0.5)
def bce_f(x, t) = binary_cross_entropy_with_logits(x, t, pos_weight=1.5) + binary_cross_entropy(sigmoid(x), t, reduction="sum")

def main() {
    let x2 = normal(shape=(3, 4), seed=20)
    let x4 = normal(shape=(2, 2, 5, 5), seed=21)
    let xs = normal(shape=(2, 3, 4), seed=22)
    print(grad(dense, wrt=(0, 1))(Dense(4, 3), x2))
    print(grad(dense)(Dense(4, 3, bias=false), x2))
    print(grad(conv, wrt=(0, 1))(Conv2d(2, 4, 3, stride=2, padding=1, groups=2), x4))
    print(grad(conv)(Conv2d(2, 3, 2, dilation=2, bias=false), x4))
    print(grad(pools)(x4))
    let bn = replace(BatchNorm2d(2), weight=[1.5, 0.5], bias=[0.1, -0.2])
    print(grad(bn_train, wrt=(0, 1))(bn, x4))
    print(grad(bn_eval, wrt=(0, 1))(replace(bn, running_mean=[0.3, -0.1], running_var=[2.0, 0.5]), x4))
    print(grad(layernorm, wrt=(0, 1))(replace(LayerNorm(4), weight=[1.0, 2.0, 0.5, -1.0]), x2))
    print(grad(embedding)(Embedding(3, 2)))
    print(grad(dropout)(x2))
    print(grad(sequential, wrt=(0, 1))(Sequential((Dense(4, 5), GELU(), Dense(5, 2), Tanh())), x2))
    print(grad(mha, wrt=(0, 1))(MultiHeadAttention(4, 2), xs))
    print(grad(mha_cross, wrt=(0, 1, 2))(MultiHeadAttention(4, 2), xs, normal(shape=(2, 5, 4), seed=23)))
    print(grad(block, wrt=(0, 1))(TransformerEncoderBlock(4, 2, 6, dropout=0.0), xs))
    print(grad(block, wrt=(0, 1))(TransformerEncoderBlock(4, 2, 6, dropout=0.0, activation="gelu", norm_first=true), xs))
    print(grad(block_train, wrt=(0, 1))(TransformerEncoderBlock(4, 2, 6, dropout=0.2), xs))
    print(grad(activations)(normal(shape=(12,), seed=24) * 2.0))
    let logits = normal(shape=(3, 3), seed=25)
    print(grad(ce)(logits))
    print(grad(ce_soft, wrt=(0, 1))(logits, normal(shape=(3, 3), seed=26)))
    print(grad(nll_f)(log_softmax(logits, axis=-1)))
    print(grad(regress, wrt=(0, 1))(normal(shape=(6,), seed=27), normal(shape=(6,), seed=28)))
    print(grad(bce_f, wrt=(0, 1))(normal(shape=(5,), seed=29) * 3.0, uniform(shape=(5,), seed=30)))
}
# CHECK: dense: finite differences along a random direction
# CHECK: conv: forward mode vs reverse mode
# CHECK: pools: forward mode vs reverse mode
# CHECK: bn_train: finite differences
# CHECK: bn_eval: finite differences
# CHECK: layernorm: finite differences
# CHECK: embedding: jacobian
# CHECK: dropout: jacobian
# CHECK: sequential: finite differences
# CHECK: mha: finite differences
# CHECK: mha_cross: forward mode vs reverse mode
# CHECK: block: finite differences
# CHECK: block_train: finite differences
# CHECK: activations: jacobian
# CHECK: ce: jacobian
# CHECK: ce_soft: finite differences
# CHECK: nll_f: jacobian
# CHECK: regress: jacobian
# CHECK: bce_f: jacobian
# CHECK: all derivatives agree
