# save/load of a model: the loaded value is a model again (its forward runs) with the saved
# parameters; save_npy/load_npy round trip (dtype and shape given, since the file does not
# exist when the program is compiled).
model Lin(n: int) {
    param w: f32[n, 2] = normal(0.0, 1.0)
    param b: f32[2] = uniform(-1.0, 1.0)
    def forward(x) = x @ w + b
}

def main() {
    let net = Lin(3, seed=1)
    save(net, "/tmp/spora_golden_d05.ckpt")
    let other = Lin(3, seed=2)
    let back = load("/tmp/spora_golden_d05.ckpt", like=other)
    let x = ones(shape=(1, 3))
    print(sum(abs(back.w - net.w)) + sum(abs(back.b - net.b)))
    print(sum(abs(back(x) - net(x))) < 1e-5)
    print(sum(abs(other(x) - net(x))) > 0.0)
    save_npy(net.w, "/tmp/spora_golden_d05.npy")
    print(load_npy("/tmp/spora_golden_d05.npy", dtype=f32, shape=(3, 2)) == net.w)
}
# CHECK: 0.0
# CHECK-NEXT: true
# CHECK-NEXT: true
# CHECK-NEXT: [[true, true], [true, true], [true, true]]
