# std.optim: optimizers and learning-rate schedules written in Spora, with torch.optim's exact
# update formulas. `import std.optim`.
#
#   let opt = sgd(lr=0.1, momentum=0.9)
#   var state = opt.init(net)                        # (step, buffers with net's structure...)
#   (net, state) = opt.update(net, g, state)         # g: the gradient, net's structure
#
# An optimizer is a model without parameters whose constructor arguments are its
# hyper-parameters (compile-time numbers). Its state is a tuple: a step counter (i32 scalar,
# the number of updates done so far) followed by trees with the parameters' structure (made
# with tree_map). Leaves whose gradient is none (integer leaves, model buffers such as
# BatchNorm's running statistics) are left unchanged.
#
# Learning-rate schedules are functions of the step (0 for the first update) returning the
# learning rate; pass one as schedule= to use it instead of the constant lr:
#   sgd(lr=0.1, schedule=cosine_annealing_lr(0.1, t_max=1000))

def zeros_like_tree(tree) = tree_map(fn (p) => zeros(shape=p.shape, dtype=p.dtype), tree)

def learning_rate(lr, schedule, step) {
    if schedule == none {
        return lr
    }
    return schedule(step)
}

# torch.optim.SGD: with d = g + weight_decay p (g negated when maximize),
#   momentum != 0:  buf = d at the first step, else momentum buf + (1 - dampening) d;
#                   d = d + momentum buf (nesterov) or buf
#   p = p - lr d
# state: (step, momentum buffers) or (step, ()) without momentum.
model SGD(lr = 0.001, momentum = 0.0, dampening = 0.0, weight_decay = 0.0, nesterov: bool = false,
          maximize: bool = false, schedule = none) {
    def init(params) {
        assert not nesterov or (momentum > 0.0 and dampening == 0.0), "nesterov momentum needs momentum > 0 and dampening = 0"
        if momentum == 0.0 {
            return (zeros(dtype=i32), ())
        }
        return (zeros(dtype=i32), zeros_like_tree(params))
    }
    def direction(p, g) {
        var d = g
        if maximize {
            d = -g
        }
        if weight_decay != 0.0 {
            d = d + weight_decay * p
        }
        return d
    }
    def update(params, grads, state) {
        let (step, bufs) = state
        let lr_t = learning_rate(lr, schedule, step)
        if momentum == 0.0 {
            let new_params = tree_map(fn (p, g) => p - cast(lr_t, p.dtype) * direction(p, g), params, grads)
            return (new_params, (step + 1, bufs))
        }
        let first = step == 0
        let new_bufs = tree_map(fn (b, g, p) => where(first, direction(p, g), momentum * b + (1.0 - dampening) * direction(p, g)),
                                bufs, grads, params)
        var new_params = params
        if nesterov {
            new_params = tree_map(fn (p, g, b) => p - cast(lr_t, p.dtype) * (direction(p, g) + momentum * b), params, grads, new_bufs)
        } else {
            new_params = tree_map(fn (p, g, b) => p - cast(lr_t, p.dtype) * b, params, grads, new_bufs)
        }
        return (new_params, (step + 1, new_bufs))
    }
}

def sgd(lr = 0.001, momentum = 0.0, dampening = 0.0, weight_decay = 0.0, nesterov: bool = false,
        maximize: bool = false, schedule = none) {
    return SGD(lr, momentum, dampening, weight_decay, nesterov, maximize, schedule)
}

# torch.optim.Adam / AdamW. At step t = step + 1, with d = g (negated when maximize; plus
# weight_decay p for Adam, L2):
#   m = b1 m + (1 - b1) d;  v = b2 v + (1 - b2) d^2     (amsgrad: vmax = max(vmax, v), used for v)
#   p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)     (eps outside the sqrt)
# AdamW (decoupled=true) first multiplies p by (1 - lr weight_decay) and adds nothing to d.
# state: (step, m, v) or (step, m, v, vmax) with amsgrad.
model Adam(lr = 0.001, betas = (0.9, 0.999), eps = 1e-8, weight_decay = 0.0, amsgrad: bool = false,
           maximize: bool = false, decoupled: bool = false, schedule = none) {
    def init(params) {
        if amsgrad {
            return (zeros(dtype=i32), zeros_like_tree(params), zeros_like_tree(params), zeros_like_tree(params))
        }
        return (zeros(dtype=i32), zeros_like_tree(params), zeros_like_tree(params))
    }
    def direction(p, g) {
        var d = g
        if maximize {
            d = -g
        }
        if weight_decay != 0.0 and not decoupled {
            d = d + weight_decay * p
        }
        return d
    }
    def update(params, grads, state) {
        let step = state[0]
        let (b1, b2) = betas
        let lr_t = learning_rate(lr, schedule, step)
        let t = cast(step + 1, f32)
        let bc1 = 1.0 - b1 ** t
        let bc2_sqrt = sqrt(1.0 - b2 ** t)
        let m = tree_map(fn (m, g, p) => b1 * m + (1.0 - b1) * direction(p, g), state[1], grads, params)
        let v = tree_map(fn (v, g, p) => b2 * v + (1.0 - b2) * square(direction(p, g)), state[2], grads, params)
        var decayed = params
        if decoupled and weight_decay != 0.0 {
            decayed = tree_map(fn (p, g) => p * cast(1.0 - lr_t * weight_decay, p.dtype), params, grads)
        }
        if amsgrad {
            let vmax = tree_map(fn (a, g, b) => maximum(a, b), state[3], grads, v)
            let new_params = tree_map(fn (p, g, m, a) => p - cast(lr_t / bc1, p.dtype) * m / (sqrt(a) / cast(bc2_sqrt, p.dtype) + eps),
                                      decayed, grads, m, vmax)
            return (new_params, (step + 1, m, v, vmax))
        }
        let new_params = tree_map(fn (p, g, m, v) => p - cast(lr_t / bc1, p.dtype) * m / (sqrt(v) / cast(bc2_sqrt, p.dtype) + eps), decayed, grads, m, v)
        return (new_params, (step + 1, m, v))
    }
}

def adam(lr = 0.001, betas = (0.9, 0.999), eps = 1e-8, weight_decay = 0.0, amsgrad: bool = false,
         maximize: bool = false, schedule = none) {
    return Adam(lr, betas, eps, weight_decay, amsgrad, maximize, false, schedule)
}

# AdamW: decoupled weight decay, PyTorch's default weight_decay = 0.01.
def adamw(lr = 0.001, betas = (0.9, 0.999), eps = 1e-8, weight_decay = 0.01, amsgrad: bool = false,
          maximize: bool = false, schedule = none) {
    return Adam(lr, betas, eps, weight_decay, amsgrad, maximize, true, schedule)
}

# ------------------------------------------------------------------ learning-rate schedules
# Each returns a function of the step (an integer: compile-time or run-time, 0 = the first
# update) giving the learning rate, PyTorch's closed forms.

def pi() = 3.141592653589793

def as_float(step) = cast(step, f32)

# lr, constant.
def constant_lr(lr) = fn (step) => lr + 0.0 * as_float(step)

# StepLR: lr * gamma ^ floor(step / step_size).
def step_lr(lr, step_size: int, gamma = 0.1) = fn (step) => lr * gamma ** as_float(step // step_size)

# MultiStepLR: lr * gamma ^ (the number of milestones <= step).
def multistep_lr(lr, milestones, gamma = 0.1) {
    return fn (step) {
        var passed = 0.0 * as_float(step)
        for m in milestones {
            passed = passed + cast(step >= m, f32)
        }
        return lr * gamma ** passed
    }
}

# ExponentialLR: lr * gamma ^ step.
def exponential_lr(lr, gamma) = fn (step) => lr * gamma ** as_float(step)

# CosineAnnealingLR: eta_min + (lr - eta_min) (1 + cos(pi step / t_max)) / 2.
def cosine_annealing_lr(lr, t_max: int, eta_min = 0.0) {
    return fn (step) => eta_min + (lr - eta_min) * 0.5 * (1.0 + cos(pi() * as_float(step) / t_max))
}

# Linear warm-up to lr over warmup_steps (lr * step / warmup_steps), then constant.
def linear_warmup(lr, warmup_steps: int) {
    return fn (step) => lr * minimum(as_float(step) / warmup_steps, 1.0)
}

# Linear warm-up, then cosine annealing to eta_min at total_steps, then eta_min (Hugging
# Face's get_cosine_schedule_with_warmup, with a floor):
#   step < warmup:  lr * step / warmup
#   else:           eta_min + (lr - eta_min) (1 + cos(pi min(1, (step - warmup) / (total - warmup)))) / 2
def warmup_cosine(lr, warmup_steps: int, total_steps: int, eta_min = 0.0) {
    return fn (step) {
        let t = as_float(step)
        let progress = minimum((t - warmup_steps) / (total_steps - warmup_steps), 1.0)
        let cosine = eta_min + (lr - eta_min) * 0.5 * (1.0 + cos(pi() * progress))
        return where(t < warmup_steps, lr * t / warmup_steps, cosine)
    }
}
