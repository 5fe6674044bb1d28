# models made of models: sub-model fields, static hyper-parameters, methods
model Lin(i: int, o: int) {
    param w: f32[i, o] = ones()
    param b: f32[o] = full(value=1.0)
    def forward(x) = x @ w + b
}

model Two(h: int = 2) {
    param l1 = Lin(3, h)
    param l2 = Lin(h, 1)
    let scale = 0.5
    def forward(x) = l2(relu(l1(x))) * scale
    def hidden(x) = l1(x)
}

def main() {
    let m = Two()
    let x = [[1.0, 2.0, 3.0]]
    print(m(x))
    print(m.hidden(x))
    print(m.l1.w.shape)
}
# CHECK: [[7.5]]
# CHECK-NEXT: [[7.0, 7.0]]
# CHECK-NEXT: (3, 2)
