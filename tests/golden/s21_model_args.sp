# models passed to typed functions; a function specialised on a model keeps its structure
model Affine(n: int) {
    param w: f32[n, n] = ones()
    def forward(x: f32[B, n]) -> f32[B, n] = x @ w
}

def apply_twice(m: Affine, x) = m(m(x))

def main() {
    let m = Affine(2)
    print(apply_twice(m, [[1.0, 2.0]]))
}
# CHECK: [[6.0, 6.0]]
