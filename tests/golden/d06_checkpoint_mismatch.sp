# loading a checkpoint into a model of another shape is a run-time error naming the field and
# both shapes
model Lin(n: int) {
    param w: f32[n, 2] = zeros()
}

def main() {
    save(Lin(3), "/tmp/spora_golden_d06.ckpt")
    let back = load("/tmp/spora_golden_d06.ckpt", like=Lin(4))
    print(back.w)
}
# EXIT: 1
# CHECK-ERR: error: checkpoint '/tmp/spora_golden_d06.ckpt': field w has shape f32[3,2], the model expects f32[4,2]
