# std.optim against torch.optim's update rules, re-implemented in python3 (standard library,
# the script at the end, run once) on the quadratic f(w) = 0.5 sum(a w^2) - sum(b w) with
# a = [1, 3], b = [0.5, 0], w0 = [1, -2]; then convergence on a small regression.
import std.optim
import std.nn

model W() {
    param w: f32[2] = full(value=1.0)
    let calls: f32[1] = zeros()
}

def start() = replace(W(), w=[1.0, -2.0])
def quad(m) = 0.5 * sum([1.0, 3.0] * m.w * m.w) - sum([0.5, 0.0] * m.w)

# `steps` updates of opt from w0; returns w
def run(opt, steps: int) {
    var m = start()
    var state = opt.init(m)
    for i in range(steps) {
        let g = grad(quad)(m)
        (m, state) = opt.update(m, g, state)
    }
    return m.w
}

def err(a, b) = max(abs(a - b))

# The same in f64: the optimizers' scalars (the scheduled rate, Adam's bias corrections) take the
# parameters' dtype.
model W64() {
    param w: f64[2] = full(value=1.0)
}
def quad64(m) = 0.5 * sum(cast([1.0, 3.0], f64) * m.w * m.w) - sum(cast([0.5, 0.0], f64) * m.w)
def run64(opt, steps: int) {
    var m = replace(W64(), w=cast([1.0, -2.0], f64))
    var state = opt.init(m)
    for i in range(steps) {
        let g = grad(quad64)(m)
        (m, state) = opt.update(m, g, state)
    }
    return m.w
}

def regression_loss(net, x, y) = mean(square(net(x) - y))

def fit(opt, steps: int) {
    var net = Dense(3, 1, seed=4)
    var state = opt.init(net)
    let x = normal(shape=(64, 3), seed=5)
    let y = x @ [[1.0], [-2.0], [0.5]] + 0.3
    for i in range(steps) {
        let (l, g) = value_and_grad(regression_loss)(net, x, y)
        (net, state) = opt.update(net, g, state)
    }
    return (regression_loss(net, x, y), state[0])
}

def main() {
    print("sgd", err(run(sgd(lr=0.1), 3), [0.8645, -0.686]) < 1e-5)
    print("momentum", err(run(sgd(lr=0.1, momentum=0.9), 3), [0.743, 0.556]) < 1e-5)
    print("dampening", err(run(sgd(lr=0.1, momentum=0.9, dampening=0.5), 3), [0.802625, 0.1225]) < 1e-5)
    print("nesterov weight_decay", err(run(sgd(lr=0.1, momentum=0.9, nesterov=true, weight_decay=0.1), 3), [0.603873, 0.725935]) < 1e-5)
    print("maximize", err(run(sgd(lr=0.1, maximize=true), 2), [1.105, -3.38]) < 1e-5)
    print("step_lr schedule", err(run(sgd(lr=1.0, schedule=step_lr(0.1, 2, 0.5)), 5), [0.856375, -0.654946]) < 1e-5)
    print("adam", err(run(adam(lr=0.1), 3), [0.704871, -1.700623]) < 1e-5)
    print("adam weight_decay", err(run(adam(lr=0.1, betas=(0.8, 0.99), weight_decay=0.1), 3), [0.706272, -1.701136]) < 1e-5)
    print("adamw", err(run(adamw(lr=0.1, weight_decay=0.1), 3), [0.67904, -1.644369]) < 1e-5)
    print("adam b2", err(run(adam(lr=0.3, betas=(0.9, 0.9)), 8), [0.543869, 0.245526]) < 1e-5)
    print("amsgrad", err(run(adam(lr=0.3, betas=(0.9, 0.9), amsgrad=true), 8), [0.535979, 0.179263]) < 1e-5)
    print("f64 adam", err(run64(adam(lr=0.1), 3), cast([0.704871, -1.700623], f64)) < 1e-5)
    print("f64 adamw", err(run64(adamw(lr=0.1, weight_decay=0.1), 3), cast([0.67904, -1.644369], f64)) < 1e-5)
    print("f64 step_lr schedule", err(run64(sgd(lr=1.0, schedule=step_lr(0.1, 2, 0.5)), 5), cast([0.856375, -0.654946], f64)) < 1e-5)
    # the state: a step counter and buffers with the parameters' structure; buffers of the
    # model (let fields) have no gradient and are left alone
    let st = adam().init(start())
    print("state", st[0], st[1].w, st[2].w.shape)
    let opt = sgd(lr=0.1, momentum=0.9, weight_decay=1.0)
    let m1 = replace(start(), calls=[5.0])
    let (m2, st2) = opt.update(m1, grad(quad)(m1), opt.init(m1))
    print("buffers kept", m2.calls, st2[0])

    # convergence: the regression (loss 4.8 at the start) is solved to high accuracy
    let (l0, n0) = fit(sgd(), 0)
    let (l_sgd, n_sgd) = fit(sgd(lr=0.3, momentum=0.5), 50)
    let (l_adam, n_adam) = fit(adam(lr=0.1), 120)
    let (l_adamw, n_adamw) = fit(adamw(lr=0.1, weight_decay=0.0, schedule=warmup_cosine(0.1, 5, 120)), 120)
    print("converged", l0 > 1.0, l_sgd < 1e-6, l_adam < 1e-4, l_adamw < 1e-3, n_sgd, n_adam)
}
# CHECK: sgd true
# CHECK-NEXT: momentum true
# CHECK-NEXT: dampening true
# CHECK-NEXT: nesterov weight_decay true
# CHECK-NEXT: maximize true
# CHECK-NEXT: step_lr schedule true
# CHECK-NEXT: adam true
# CHECK-NEXT: adam weight_decay true
# CHECK-NEXT: adamw true
# CHECK-NEXT: adam b2 true
# CHECK-NEXT: amsgrad true
# CHECK-NEXT: f64 adam true
# CHECK-NEXT: f64 adamw true
# CHECK-NEXT: f64 step_lr schedule true
# CHECK-NEXT: state 0 [0.0, 0.0] (2,)
# CHECK-NEXT: buffers kept [5.0] 1
# CHECK-NEXT: converged true true true true 50 120
#
# The python3 script (standard library only) that computed the expected values:
#   # torch.optim.SGD / Adam / AdamW update rules (their documented algorithms), in double, on
#   # f(w) = 0.5 sum(a w^2) - sum(b w), gradient a w - b, from w = [1, -2], 3 steps.
#   import math
#   a, b, w0 = [1.0, 3.0], [0.5, 0.0], [1.0, -2.0]
#   def fmt(v): return '[' + ', '.join(repr(round(x, 6)) for x in v) + ']'
#   def grad(w): return [a[i] * w[i] - b[i] for i in range(2)]
#   def sgd(lr, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False, maximize=False, sched=None, steps=3):
#       w = list(w0); buf = None
#       for t in range(steps):
#           rate = sched(t) if sched else lr
#           g = grad(w)
#           if maximize: g = [-x for x in g]
#           g = [g[i] + wd * w[i] for i in range(2)]
#           if momentum != 0:
#               buf = list(g) if buf is None else [momentum * buf[i] + (1 - dampening) * g[i] for i in range(2)]
#               g = [g[i] + momentum * buf[i] for i in range(2)] if nesterov else buf
#           w = [w[i] - rate * g[i] for i in range(2)]
#       return w
#   def adam(lr, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, amsgrad=False, decoupled=False, maximize=False, steps=3):
#       w = list(w0); m = [0.0, 0.0]; v = [0.0, 0.0]; vmax = [0.0, 0.0]
#       for t in range(1, steps + 1):
#           g = grad(w)
#           if maximize: g = [-x for x in g]
#           if decoupled: w = [w[i] * (1 - lr * wd) for i in range(2)]
#           elif wd != 0: g = [g[i] + wd * w[i] for i in range(2)]
#           m = [b1 * m[i] + (1 - b1) * g[i] for i in range(2)]
#           v = [b2 * v[i] + (1 - b2) * g[i] * g[i] for i in range(2)]
#           bc1 = 1 - b1 ** t; bc2 = 1 - b2 ** t
#           if amsgrad: vmax = [max(vmax[i], v[i]) for i in range(2)]
#           vv = vmax if amsgrad else v
#           w = [w[i] - lr / bc1 * m[i] / (math.sqrt(vv[i]) / math.sqrt(bc2) + eps) for i in range(2)]
#       return w
#   print('sgd', fmt(sgd(0.1)))
#   print('momentum', fmt(sgd(0.1, momentum=0.9)))
#   print('dampening', fmt(sgd(0.1, momentum=0.9, dampening=0.5)))
#   print('nesterov wd', fmt(sgd(0.1, momentum=0.9, nesterov=True, wd=0.1)))
#   print('maximize', fmt(sgd(0.1, maximize=True, steps=2)))
#   print('step_lr', fmt(sgd(0.1, sched=lambda t: 0.1 * 0.5 ** (t // 2), steps=5)))
#   print('adam', fmt(adam(0.1)))
#   print('adam wd', fmt(adam(0.1, wd=0.1, b1=0.8, b2=0.99)))
#   print('adamw', fmt(adam(0.1, wd=0.1, decoupled=True)))
#   print('adam b2', fmt(adam(0.3, b2=0.9, steps=8)))
#   print('amsgrad', fmt(adam(0.3, b2=0.9, amsgrad=True, steps=8)))
