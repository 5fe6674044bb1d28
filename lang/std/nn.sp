# std.nn: layers, activations and initialisers, written in Spora and differentiated by
# Spora's own AD. `import std.nn` makes them available as nn.Dense or Dense.
#
# Conventions (lang/std/README.md has the whole story):
#  - A layer is a model; calling it runs `forward`. Weights use Spora's x @ w layout: a Dense
#    weight is f32[n_in, n_out] (PyTorch's nn.Linear stores the transpose); convolutions are
#    NCHW x OIHW like PyTorch. Default initialisations are PyTorch's.
#  - Every layer also has `apply(x, train=false, step=0) -> (y, layer)`: the output and the
#    layer with its non-parameter state updated. Only BatchNorm has such state (its running
#    statistics, kept in `let` fields: buffers, carried with the model but never
#    differentiated, so their gradient is none and the optimizers leave them alone). `train`
#    selects training behaviour (batch statistics, dropout); `step` (a compile-time or
#    run-time integer, e.g. the optimizer's step counter) makes dropout masks differ per step.
#  - Initialisers are functions with `shape`, `dtype` and `seed` parameters; in a model's
#    `param w: f32[...] = xavier_uniform()` those three come from the field's type and the
#    model's seed, like for the primitives normal(), uniform(), zeros() and ones().

# ------------------------------------------------------------------ activations
def relu6(x) = minimum(maximum(x, 0.0), 6.0)

def leaky_relu(x, slope = 0.01) = where(x > 0.0, x, x * slope)

def silu(x) = x * sigmoid(x)

def elu(x, alpha = 1.0) = where(x > 0.0, x, alpha * expm1(minimum(x, 0.0)))

def softplus(x) = maximum(x, 0.0) + log1p(exp(-abs(x)))

# GELU with the tanh approximation (PyTorch approximate="tanh"); gelu(x) is the exact one.
def gelu_tanh(x) = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))

# ------------------------------------------------------------------ initialisers
# (fan_in, fan_out) of a weight shape. Spora's layouts: a 2-D weight is [n_in, n_out] (x @ w);
# a convolution weight is [out, in / groups, kh, kw] (fans times the receptive field, as in
# PyTorch); a 1-D tensor counts as [n, n].
def fans(shape) {
    assert len(shape) >= 1, "fans: a weight needs at least one axis"
    if len(shape) == 1 {
        return (shape[0], shape[0])
    }
    if len(shape) == 2 {
        return (shape[0], shape[1])
    }
    var numel = 1
    for d in shape {
        numel = numel * d
    }
    return (numel // shape[0], numel // shape[1])
}

# torch.nn.init.calculate_gain.
def calculate_gain(nonlinearity = "leaky_relu", param = 0.01) {
    if nonlinearity == "relu" {
        return 2.0 ** 0.5
    }
    if nonlinearity == "tanh" {
        return 5.0 / 3.0
    }
    if nonlinearity == "leaky_relu" {
        return (2.0 / (1.0 + param * param)) ** 0.5
    }
    if nonlinearity == "selu" {
        return 0.75
    }
    return 1.0  # linear, conv*, sigmoid
}

def constant(value = 0.0, shape = (), dtype = f32, seed = 0) = full(shape, value, dtype=dtype)

# Glorot & Bengio: U(-a, a), a = gain * sqrt(6 / (fan_in + fan_out)).
def xavier_uniform(gain = 1.0, shape = (), dtype = f32, seed = 0) {
    let (fan_in, fan_out) = fans(shape)
    let a = gain * (6.0 / (fan_in + fan_out)) ** 0.5
    return uniform(-a, a, shape=shape, seed=seed, dtype=dtype)
}

# N(0, std), std = gain * sqrt(2 / (fan_in + fan_out)).
def xavier_normal(gain = 1.0, shape = (), dtype = f32, seed = 0) {
    let (fan_in, fan_out) = fans(shape)
    return normal(0.0, gain * (2.0 / (fan_in + fan_out)) ** 0.5, shape=shape, seed=seed, dtype=dtype)
}

def fan_of(shape, mode) {
    let (fan_in, fan_out) = fans(shape)
    return fan_in if mode == "fan_in" else fan_out
}

# He et al.: U(-b, b), b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).
# PyTorch's nn.Linear and nn.Conv2d use kaiming_uniform(a=sqrt(5)), i.e. b = 1 / sqrt(fan_in).
def kaiming_uniform(a = 0.0, mode = "fan_in", nonlinearity = "leaky_relu", shape = (), dtype = f32, seed = 0) {
    let b = calculate_gain(nonlinearity, a) * (3.0 / fan_of(shape, mode)) ** 0.5
    return uniform(-b, b, shape=shape, seed=seed, dtype=dtype)
}

# N(0, std), std = gain / sqrt(fan).
def kaiming_normal(a = 0.0, mode = "fan_in", nonlinearity = "leaky_relu", shape = (), dtype = f32, seed = 0) {
    let std = calculate_gain(nonlinearity, a) / fan_of(shape, mode) ** 0.5
    return normal(0.0, std, shape=shape, seed=seed, dtype=dtype)
}

def glorot_uniform(gain = 1.0, shape = (), dtype = f32, seed = 0) = xavier_uniform(gain, shape, dtype, seed)
def glorot_normal(gain = 1.0, shape = (), dtype = f32, seed = 0) = xavier_normal(gain, shape, dtype, seed)
def he_uniform(a = 0.0, mode = "fan_in", nonlinearity = "relu", shape = (), dtype = f32, seed = 0) {
    return kaiming_uniform(a, mode, nonlinearity, shape, dtype, seed)
}
def he_normal(a = 0.0, mode = "fan_in", nonlinearity = "relu", shape = (), dtype = f32, seed = 0) {
    return kaiming_normal(a, mode, nonlinearity, shape, dtype, seed)
}

# ------------------------------------------------------------------ layers
# y = x @ w + b, initialised like nn.Linear: w and b uniform in +-1/sqrt(n_in).
# bias=false: b is f32[0] and unused.
model Dense(n_in: int, n_out: int, bias: bool = true) {
    param w: f32[n_in, n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    param b: f32[n_out if bias else 0] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    def forward(x) {
        if bias {
            return x @ w + b
        }
        return x @ w
    }
    def apply(x, train = false, step = 0) = (forward(x), self)
}

# 2-D convolution over NCHW input, square kernel, PyTorch's nn.Conv2d: w [out, in/groups, k, k]
# and b [out] uniform in +-1/sqrt(in/groups * k * k). stride, padding and dilation are ints or
# (height, width) pairs.
model Conv2d(in_channels: int, out_channels: int, kernel_size: int, stride = 1, padding = 0, dilation = 1,
             groups: int = 1, bias: bool = true) {
    let bound = (in_channels // groups * kernel_size * kernel_size) ** -0.5
    param w: f32[out_channels, in_channels // groups, kernel_size, kernel_size] = uniform(-bound, bound)
    param b: f32[out_channels if bias else 0] = uniform(-bound, bound)
    def forward(x) {
        if bias {
            return conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
        }
        return conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    }
    def apply(x, train = false, step = 0) = (forward(x), self)
}

# Pooling over NCHW windows; stride defaults to the kernel (PyTorch). Average pooling counts
# padded zeros (count_include_pad=True).
model MaxPool2d(kernel_size, stride = none, padding = 0) {
    def forward(x) = max_pool2d(x, kernel_size, stride=stride, padding=padding)
    def apply(x, train = false, step = 0) = (forward(x), self)
}

model AvgPool2d(kernel_size, stride = none, padding = 0) {
    def forward(x) = avg_pool2d(x, kernel_size, stride=stride, padding=padding)
    def apply(x, train = false, step = 0) = (forward(x), self)
}

# Batch normalisation over the channel axis 1 of [N, C] or [N, C, H, W] input (PyTorch's
# BatchNorm1d / BatchNorm2d). weight = 1, bias = 0; running_mean = 0, running_var = 1 are
# buffers. forward(x, train=false): eval mode normalises with the running statistics, train
# mode with the batch statistics (biased variance). apply(x, train=true) also returns the layer
# with running = (1 - momentum) * running + momentum * batch (unbiased batch variance).
model BatchNorm2d(num_features: int, eps = 1e-5, momentum = 0.1) {
    param weight: f32[num_features] = ones()
    param bias: f32[num_features] = zeros()
    let running_mean: f32[num_features] = zeros()
    let running_var: f32[num_features] = ones()
    def forward(x, train = false) = apply(x, train)[0]
    def apply(x, train = false, step = 0) {
        if train {
            let (y, m, v) = batch_norm(x, weight, bias, running_mean, running_var, training=true,
                                       momentum=momentum, eps=eps)
            return (y, replace(self, running_mean=stop_gradient(m), running_var=stop_gradient(v)))
        }
        return (batch_norm(x, weight, bias, running_mean, running_var, eps=eps), self)
    }
}

model BatchNorm1d(num_features: int, eps = 1e-5, momentum = 0.1) {
    param bn = BatchNorm2d(num_features, eps, momentum)
    def forward(x, train = false) = bn(x, train)
    def apply(x, train = false, step = 0) {
        let (y, b) = bn.apply(x, train)
        return (y, replace(self, bn=b))
    }
}

# Layer normalisation over the last axis (PyTorch's nn.LayerNorm(normalized_shape=n)):
# weight = 1, bias = 0, biased variance.
model LayerNorm(normalized_shape: int, eps = 1e-5) {
    param weight: f32[normalized_shape] = ones()
    param bias: f32[normalized_shape] = zeros()
    def forward(x) = layer_norm(x, weight, bias, eps=eps)
    def apply(x, train = false, step = 0) = (forward(x), self)
}

# A lookup table: indices of any shape -> [..., embedding_dim]; weight ~ N(0, 1) (PyTorch).
model Embedding(num_embeddings: int, embedding_dim: int) {
    param weight: f32[num_embeddings, embedding_dim] = normal(0.0, 1.0)
    def forward(indices) = gather(weight, indices, axis=0)
    def apply(x, train = false, step = 0) = (forward(x), self)
}

# Uniform [0, 1) numbers of `shape` that depend on a seed (compile-time) and a step (compile-
# time or run-time integer). The registry's RNG takes compile-time seeds only, so the step
# selects two rotations of two seeded tables A, B of n = prod(shape) numbers:
#   u[i] = frac(A[(i + o1) mod n] + B[(i + o2) mod n]),  (o1, o2) = MINSTD(step) mod n,
# exactly uniform, independent across elements; two steps share a mask only if their offsets
# collide (probability about 1/n).
def step_uniform(shape, seed, step) {
    var n = 1
    for d in shape {
        n = n * d
    }
    let m = 2147483647
    let h1 = (cast(step, i64) % (m - 1) + 1) * 48271 % m
    let h2 = h1 * 48271 % m
    let i = arange(n, dtype=i64)
    let a = gather(uniform(shape=(n,), seed=seed), (i + h1) % n, axis=0)
    let b = gather(uniform(shape=(n,), seed=seed + 1), (i + h2) % n, axis=0)
    let u = a + b
    return reshape(where(u >= 1.0, u - 1.0, u), shape)
}

# Inverted dropout (PyTorch's nn.Dropout): in training, zero each element with probability p
# and scale the rest by 1 / (1 - p); identity in eval mode. The mask depends on the layer's
# seed and on `step`, so pass a different step each training step.
model Dropout(p = 0.5) {
    def forward(x, train = false, step = 0) {
        if not train or p == 0.0 {
            return x
        }
        if p >= 1.0 {
            return x * 0.0
        }
        let keep = step_uniform(x.shape, seed, step) >= p
        return where(keep, x * (1.0 / (1.0 - p)), 0.0)
    }
    def apply(x, train = false, step = 0) = (forward(x, train, step), self)
}

# Activations and reshapes as layers (for Sequential).
model ReLU() {
    def forward(x) = relu(x)
    def apply(x, train = false, step = 0) = (relu(x), self)
}
model GELU() {
    def forward(x) = gelu(x)
    def apply(x, train = false, step = 0) = (gelu(x), self)
}
model Tanh() {
    def forward(x) = tanh(x)
    def apply(x, train = false, step = 0) = (tanh(x), self)
}
model Sigmoid() {
    def forward(x) = sigmoid(x)
    def apply(x, train = false, step = 0) = (sigmoid(x), self)
}
model Flatten(start_axis: int = 1) {
    def forward(x) = flatten(x, start_axis)
    def apply(x, train = false, step = 0) = (flatten(x, start_axis), self)
}
model Identity() {
    def forward(x) = x
    def apply(x, train = false, step = 0) = (x, self)
}

# Layers applied in order: Sequential((Dense(784, 256), ReLU(), Dense(256, 10))).
# forward(x) calls each layer's forward; apply(x, train, step) each layer's apply, threading
# the updated layers (BatchNorm statistics) into the returned Sequential.
model Sequential(layers) {
    param layers = layers
    def forward(x) {
        var h = x
        for layer in layers {
            h = layer(h)
        }
        return h
    }
    def apply(x, train = false, step = 0) {
        var h = x
        var updated = ()
        for layer in layers {
            let (y, l) = layer.apply(h, train, step)
            h = y
            updated = updated + (l,)
        }
        return (h, replace(self, layers=updated))
    }
}

# ------------------------------------------------------------------ attention
# Scaled dot-product attention: softmax(q @ k^T / sqrt(d) + mask) @ v over the last two axes.
# mask: none, a bool tensor (true = not allowed, PyTorch's attn_mask convention) or a float
# tensor added to the scores; it broadcasts against [..., Lq, Lk].
def scaled_dot_product_attention(q, k, v, mask = none) {
    let d = q.shape[len(q.shape) - 1]
    var scores = (q @ swap_last(k)) * (d ** -0.5)
    if mask != none {
        if mask.dtype == bool {
            scores = where(mask, -1e30, scores)
        } else {
            scores = scores + mask
        }
    }
    return softmax(scores, axis=-1) @ v
}

def swap_last(x) {
    let r = len(x.shape)
    if r == 3 {
        return permute(x, (0, 2, 1))
    }
    if r == 4 {
        return permute(x, (0, 1, 3, 2))
    }
    return transpose(x)
}

# [B, L, E] -> [B, H, L, E / H] and back.
def split_heads(x, heads: int) {
    let (b, l, e) = x.shape
    return permute(reshape(x, (b, l, heads, e // heads)), (0, 2, 1, 3))
}
def merge_heads(x) {
    let (b, h, l, d) = x.shape
    return reshape(permute(x, (0, 2, 1, 3)), (b, l, h * d))
}

# Multi-head attention, batch first ([B, L, E] in and out), PyTorch's nn.MultiheadAttention:
# the packed input projection in_w [E, 3E] (columns: query, key, value) is xavier-uniform with
# in_b = 0; the output projection out_w [E, E] is uniform in +-1/sqrt(E) with out_b = 0.
# forward(query, key, value, mask=none, train=false, step=0); dropout acts on the attention
# weights in training.
model MultiHeadAttention(embed_dim: int, num_heads: int, dropout = 0.0) {
    param in_w: f32[embed_dim, 3 * embed_dim] = xavier_uniform()
    param in_b: f32[3 * embed_dim] = zeros()
    param out_w: f32[embed_dim, embed_dim] = uniform(-(embed_dim ** -0.5), embed_dim ** -0.5)
    param out_b: f32[embed_dim] = zeros()
    param drop = Dropout(dropout)
    def forward(query, key, value, mask = none, train = false, step = 0) {
        assert embed_dim % num_heads == 0, "embed_dim must be divisible by num_heads"
        let e = embed_dim
        let q = split_heads(query @ in_w[:, 0:e] + in_b[0:e], num_heads)
        let k = split_heads(key @ in_w[:, e:2 * e] + in_b[e:2 * e], num_heads)
        let v = split_heads(value @ in_w[:, 2 * e:3 * e] + in_b[2 * e:3 * e], num_heads)
        var scores = (q @ permute(k, (0, 1, 3, 2))) * ((e // num_heads) ** -0.5)
        if mask != none {
            if mask.dtype == bool {
                scores = where(mask, -1e30, scores)
            } else {
                scores = scores + mask
            }
        }
        let attn = drop(softmax(scores, axis=-1), train, step)
        return merge_heads(attn @ v) @ out_w + out_b
    }
    def apply(x, train = false, step = 0) = (forward(x, x, x, train=train, step=step), self)
}

# One Transformer encoder layer, PyTorch's nn.TransformerEncoderLayer(batch_first=True):
# post-norm (norm_first=false): x = norm1(x + drop1(sa(x))); x = norm2(x + drop2(ff(x))),
# ff(x) = linear2(drop(act(linear1(x)))); pre-norm (norm_first=true):
# x = x + drop1(sa(norm1(x))); x = x + drop2(ff(norm2(x))). activation "relu" or "gelu".
model TransformerEncoderBlock(d_model: int, nhead: int, dim_feedforward: int = 2048, dropout = 0.1,
                              activation = "relu", layer_norm_eps = 1e-5, norm_first: bool = false) {
    param self_attn = MultiHeadAttention(d_model, nhead, dropout)
    param linear1 = Dense(d_model, dim_feedforward)
    param linear2 = Dense(dim_feedforward, d_model)
    param norm1 = LayerNorm(d_model, layer_norm_eps)
    param norm2 = LayerNorm(d_model, layer_norm_eps)
    param drop = Dropout(dropout)
    param drop1 = Dropout(dropout)
    param drop2 = Dropout(dropout)
    def act(x) {
        if activation == "gelu" {
            return gelu(x)
        }
        return relu(x)
    }
    def sa(x, mask, train, step) = drop1(self_attn(x, x, x, mask, train, step), train, step)
    def ff(x, train, step) = drop2(linear2(drop(act(linear1(x)), train, step)), train, step)
    def forward(x, mask = none, train = false, step = 0) {
        if norm_first {
            let h = x + sa(norm1(x), mask, train, step)
            return h + ff(norm2(h), train, step)
        }
        let h = norm1(x + sa(x, mask, train, step))
        return norm2(h + ff(h, train, step))
    }
    def apply(x, train = false, step = 0) = (forward(x, train=train, step=step), self)
}
