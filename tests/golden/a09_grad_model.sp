# the gradient of a model has the model's structure, sub-models included
model Lin(i: int, o: int) {
    param w: f32[i, o] = ones()
    param b: f32[o] = zeros()
    def forward(x) = x @ w + b
}

model Net() {
    param a = Lin(2, 2)
    param c = Lin(2, 1)
    def forward(x) = c(a(x))
}

def loss(n: Net, x) = sum(n(x))

def main() {
    let g = grad(loss)(Net(), [[1.0, 2.0]])
    print(g.a.w)
    print(g.a.b, g.c.w, g.c.b)
}
# CHECK: [[1.0, 1.0], [2.0, 2.0]]
# CHECK-NEXT: [1.0, 1.0] [[3.0], [3.0]] [1.0]
