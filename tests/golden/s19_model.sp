# a model with parameters, initialisers and a forward; calling it runs forward
model Scale(n: int) {
    param w: f32[n] = full(value=2.0)
    param b: f32[n] = zeros()
    def forward(x: f32[n]) -> f32[n] = x * w + b
}

def main() {
    let m = Scale(3)
    print(m([1.0, 2.0, 3.0]))
    print(m.w)
    print(m.n)
}
# CHECK: [2.0, 4.0, 6.0]
# CHECK-NEXT: [2.0, 2.0, 2.0]
# CHECK-NEXT: 3
