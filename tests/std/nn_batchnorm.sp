# BatchNorm: batch statistics in training, running statistics in eval, running statistics
# updated by apply(x, train=true) with momentum 0.1 and the unbiased variance (PyTorch); the
# statistics are buffers: their gradient is none and optimizers leave them alone. Expected
# values from the python3 script at the end (run once).
import std.nn
import std.optim

def err(a, b) = max(abs(a - b))

model Net() {
    param conv = Conv2d(1, 2, 1)
    param bn = BatchNorm2d(2)
    def apply(x, train = false, step = 0) {
        let (h, bn2) = bn.apply(conv(x), train)
        return (h, replace(self, bn=bn2))
    }
    def forward(x) = apply(x)[0]
}

def loss(net, x) {
    let (h, net2) = net.apply(x, true)
    return (sum(square(h - 1.0)), net2)
}

def main() {
    let bn = replace(BatchNorm2d(2), weight=[2.0, 0.5], bias=[0.1, -0.2])
    let x1 = [[[[1.0, 2.0]], [[0.0, -1.0]]], [[[3.0, 5.0]], [[2.0, 4.0]]]]
    let x2 = [[[[0.0, 0.0]], [[1.0, 1.0]]], [[[4.0, -2.0]], [[3.0, 0.5]]]]
    let (y1, bn1) = bn.apply(x1, true)
    print("train 1", err(y1, [[[[-2.266427, -0.914183]], [[-0.525472, -0.785849]]], [[[0.438061, 3.142548]], [[-0.004717, 0.516038]]]]) < 1e-5,
          err(bn1.running_mean, [0.275, 0.125]) < 1e-6, err(bn1.running_var, [1.191667, 1.391667]) < 1e-6)
    print("forward train", err(bn(x1, true), y1) == 0.0)
    let (y2, bn2) = bn1.apply(x2, true)
    print("train 2", err(y2, [[[[-0.358831, -0.358831]], [[-0.395282, -0.395282]]], [[[3.311817, -2.194155]], [[0.646223, -0.655659]]]]) < 1e-5,
          err(bn2.running_mean, [0.2975, 0.25]) < 1e-6, err(bn2.running_var, [1.705833, 1.375417]) < 1e-6)
    print("eval", err(bn2(x1), [[[[1.175739, 2.707039]], [[-0.306584, -0.732919]]], [[[4.23834, 7.300941]], [[0.546087, 1.398757]]]]) < 1e-5)
    let (ye, bne) = bn2.apply(x1)
    print("eval apply", err(ye, bn2(x1)) == 0.0, err(bne.running_mean, bn2.running_mean) == 0.0)
    # BatchNorm1d: [N, C] with the same statistics as [N, C, 1, 1]
    let b1 = BatchNorm1d(2)
    let (z, b1n) = b1.apply([[1.0, 0.0], [3.0, 2.0], [2.0, 5.0]], true)
    let (z4, b4n) = BatchNorm2d(2).apply([[[[1.0]], [[0.0]]], [[[3.0]], [[2.0]]], [[[2.0]], [[5.0]]]], true)
    print("batchnorm1d", err(z, reshape(z4, (3, 2))) < 1e-6, err(b1n.bn.running_var, b4n.running_var) < 1e-6)

    # Training with has_aux: the loss returns the updated model; SGD with weight decay changes
    # the parameters, never the statistics (their gradient is none)
    var net = Net()
    let opt = sgd(lr=0.1, momentum=0.9, weight_decay=0.5)
    var state = opt.init(net)
    let x = reshape(arange(0, 8, dtype=f32) * 0.5 - 1.0, (2, 1, 2, 2))
    print("grad of buffers", grad(fn (n) => loss(n, x)[0])(net).bn.running_mean == none)
    var stats = net.bn.running_mean
    for step in range(3) {
        let ((l, net2), g) = value_and_grad(loss, has_aux=true)(net, x)
        stats = net2.bn.running_mean
        (net, state) = opt.update(net2, g, state)
    }
    print("statistics kept", err(net.bn.running_mean, stats) == 0.0, max(abs(stats)) > 0.0)
    print("parameters moved", err(net.bn.weight, [1.0, 1.0]) > 0.0)
}
# CHECK: train 1 true true true
# CHECK-NEXT: forward train true
# CHECK-NEXT: train 2 true true true
# CHECK-NEXT: eval true
# CHECK-NEXT: eval apply true true
# CHECK-NEXT: batchnorm1d true true
# CHECK-NEXT: grad of buffers true
# CHECK-NEXT: statistics kept true true
# CHECK-NEXT: parameters moved true
#
# The python3 script (standard library only) that computed the expected values:
#   import math
#   def fmt(v):
#       if isinstance(v, list): return '[' + ', '.join(fmt(e) for e in v) + ']'
#       return repr(round(v, 6))
#   def channels(x):  # x [N, C, H, W] -> per-channel value lists
#       C = len(x[0]); return [[v for n in x for row in n[c] for v in row] for c in range(C)]
#   def bn_train(x, w, b, rm, rv, mom=0.1, eps=1e-5):
#       ch = channels(x); y = []
#       mean = [sum(v) / len(v) for v in ch]
#       var = [sum((a - mean[c]) ** 2 for a in v) / len(v) for c, v in enumerate(ch)]
#       unb = [sum((a - mean[c]) ** 2 for a in v) / (len(v) - 1) for c, v in enumerate(ch)]
#       y = [[[[(a - mean[c]) / math.sqrt(var[c] + eps) * w[c] + b[c] for a in row] for row in n[c]] for c in range(len(n))] for n in x]
#       return y, [(1 - mom) * rm[c] + mom * mean[c] for c in range(len(w))], [(1 - mom) * rv[c] + mom * unb[c] for c in range(len(w))]
#   def bn_eval(x, w, b, rm, rv, eps=1e-5):
#       return [[[[(a - rm[c]) / math.sqrt(rv[c] + eps) * w[c] + b[c] for a in row] for row in n[c]] for c in range(len(n))] for n in x]
#   w, b = [2.0, 0.5], [0.1, -0.2]
#   x1 = [[[[1.0, 2.0]], [[0.0, -1.0]]], [[[3.0, 5.0]], [[2.0, 4.0]]]]
#   x2 = [[[[0.0, 0.0]], [[1.0, 1.0]]], [[[4.0, -2.0]], [[3.0, 0.5]]]]
#   y1, rm, rv = bn_train(x1, w, b, [0.0, 0.0], [1.0, 1.0])
#   print(fmt(y1), fmt(rm), fmt(rv))
#   y2, rm, rv = bn_train(x2, w, b, rm, rv)
#   print(fmt(y2), fmt(rm), fmt(rv))
#   print(fmt(bn_eval(x1, w, b, rm, rv)))
