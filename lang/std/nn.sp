# std.nn: layers, activations and initialisers, written in Spora and differentiated by
# Spora's own AD. `import std.nn` makes them available as nn.Dense or Dense.

def relu6(x) = minimum(maximum(x, 0.0), 6.0)

def leaky_relu(x, slope = 0.01) = where(x > 0.0, x, x * slope)

def silu(x) = x * sigmoid(x)

# A fully connected layer y = x @ w + b, initialised like PyTorch's nn.Linear
# (uniform in +-1/sqrt(n_in)).
model Dense(n_in: int, n_out: int) {
    param w: f32[n_in, n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    param b: f32[n_out] = uniform(-(n_in ** -0.5), n_in ** -0.5)
    def forward(x) = x @ w + b
}
