# std.amp: loss scaling for mixed-precision training (`import std.amp`), with PyTorch
# GradScaler's semantics and defaults. Mixed precision itself is a switch, not a library:
# `set_amp("O1", bf16)` as a first statement of main, or `spora run --amp O1 --amp-dtype bf16`
# (semantics/amp.h says what each level casts).
#
#   var scaler = loss_scaler()                            # dynamic: 65536, x2 every 2000 steps
#   for (x, y) in data {
#       let (l, g) = scaled_value_and_grad(loss, scaler)(net, x, y)   # l, g unscaled
#       (net, state, scaler) = scaler.step(opt, net, g, state)       # skipped on inf/nan
#   }
#
# Why: f16 gradients below 2^-24 flush to zero. The loss is multiplied by the scale before
# differentiation, so every gradient is scale times larger while it flows through the f16
# network, and divided by the scale again in f32 (the master weights' dtype). The scale is a
# power of two, so scaling and unscaling are exact: without overflow the parameters are
# exactly those of the unscaled run.
#
# Dynamic scaling (GradScaler): when a gradient is inf or nan the step is skipped (parameters,
# optimizer state and its step counter unchanged) and the scale is multiplied by
# backoff_factor (0.5); after growth_interval (2000) finite steps in a row it is multiplied by
# growth_factor (2). A static scaler keeps its scale and still skips non-finite steps.
#
# bf16 has f32's exponent range: it needs no loss scaling (use plain value_and_grad).

# The scaler: its hyper-parameters are compile-time constructor arguments; its state is two
# buffers (`let` fields: carried, never differentiated), scale (f32) and good_steps (i32, finite
# steps since the last change of scale).
model LossScaler(init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5,
                 growth_interval = 2000) {
    let scale: f32 = full(value=init_scale)
    let good_steps: i32 = zeros()

    # f's value and gradient (with respect to its first argument) for (net, x, y), computed on
    # f * scale and unscaled in f32.
    def scaled_grads(f, net, x, y) {
        let s = scale
        let (l, g) = value_and_grad(fn (n, a, b) => f(n, a, b) * s)(net, x, y)
        let inv = 1.0 / s
        return (l * inv, tree_map(fn (t) => t * inv, g))
    }

    # opt.update(net, g, state) when every gradient is finite, else net and state unchanged;
    # returns (net, state, the scaler with its scale updated).
    def step(opt, net, g, state) {
        let ok = all_finite(g)
        let (new_net, new_state) = opt.update(net, g, state)
        let kept_net = tree_map(fn (a, b) => where(ok, a, b), new_net, net)
        let kept_state = tree_map(fn (a, b) => where(ok, a, b), new_state, state)
        return (kept_net, kept_state, update(ok))
    }

    # The scaler after a step whose gradients were finite (ok) or not.
    def update(ok) {
        let good = good_steps + 1
        let grow = good >= growth_interval
        let finite_scale = where(grow, scale * growth_factor, scale)
        let new_scale = where(ok, finite_scale, scale * backoff_factor)
        let new_good = where(ok, where(grow, 0, good), 0)
        return replace(self, scale=new_scale, good_steps=new_good)
    }
}

# A dynamic loss scaler with GradScaler's defaults.
def loss_scaler(init_scale = 65536.0, growth_factor = 2.0, backoff_factor = 0.5,
                growth_interval = 2000) {
    return LossScaler(init_scale, growth_factor, backoff_factor, growth_interval)
}

# A static loss scaler: the scale never changes (non-finite steps are still skipped).
def static_loss_scaler(scale = 128.0) = LossScaler(scale, 1.0, 1.0, 2000)

# value_and_grad of the loss scaled by the scaler, unscaled: (loss, gradient) like
# value_and_grad(f)(net, x, y). f takes (net, x, y).
def scaled_value_and_grad(f, scaler) = fn (net, x, y) => scaler.scaled_grads(f, net, x, y)

# true when every tensor of the tree is finite (no inf, no nan): inf and nan fail
# `abs(t) <= the largest finite f32` (a comparison with nan is false). (Not `t * 0 == 0`: the
# simplifier folds x * 0 to 0, as fast-math compilers do.)
def all_finite(tree) {
    var lowest = 1.0
    for t in tree_leaves(tree) {
        lowest = minimum(lowest, min(cast(abs(cast(t, f32)) <= 3.4028234663852886e38, f32)))
    }
    return lowest == 1.0
}
