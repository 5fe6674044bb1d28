# MultiHeadAttention and TransformerEncoderBlock: shapes, a hand-computed case, and agreement
# with straightforward reimplementations written here with primitives only (a loop over the
# heads, softmax spelled out, layer norm spelled out).
import std.nn

def err(a, b) = max(abs(a - b))

def softmax_rows(s) {
    let e = exp(s - max(s, axis=-1, keepdims=true))
    return e / sum(e, axis=-1, keepdims=true)
}

# one head at a time: q, k, v [B, L, E]; mask [Lq, Lk] bool (true = masked) or none
def reference_mha(m, q, k, v, mask, heads) {
    let e = q.shape[2]
    let d = e // heads
    let qp = q @ m.in_w[:, 0:e] + m.in_b[0:e]
    let kp = k @ m.in_w[:, e:2 * e] + m.in_b[e:2 * e]
    let vp = v @ m.in_w[:, 2 * e:3 * e] + m.in_b[2 * e:3 * e]
    var outs = ()
    for h in (0, 1) {
        let qh = qp[:, :, h * d:(h + 1) * d]
        let kh = kp[:, :, h * d:(h + 1) * d]
        var s = (qh @ transpose(kh, (0, 2, 1))) / sqrt(d * 1.0)
        if mask != none {
            s = s - 1e9 * cast(mask, f32)
        }
        outs = outs + (softmax_rows(s) @ vp[:, :, h * d:(h + 1) * d],)
    }
    return concat(outs, axis=2) @ m.out_w + m.out_b
}

def reference_ln(x, ln) {
    let mu = mean(x, axis=-1, keepdims=true)
    let var_ = mean(square(x - mu), axis=-1, keepdims=true)
    return (x - mu) / sqrt(var_ + 1e-5) * ln.weight + ln.bias
}

def reference_block(b, x, pre) {
    let sa = fn (z) => reference_mha(b.self_attn, z, z, z, none, 2)
    let ff = fn (z) => relu(z @ b.linear1.w + b.linear1.b) @ b.linear2.w + b.linear2.b
    if pre {
        let h = x + sa(reference_ln(x, b.norm1))
        return h + ff(reference_ln(h, b.norm2))
    }
    let h = reference_ln(x + sa(x), b.norm1)
    return reference_ln(h + ff(h), b.norm2)
}

def main() {
    # by hand (python3): one head, identity projections, x = [[1, 0], [0, 2]]:
    # scores x x^T / sqrt(2), softmax rows, times x -> [[0.669762, 0.660477], [0.055807, 1.888386]];
    # with the causal mask row 0 sees only itself -> [1, 0]
    let eye = [[1.0, 0.0], [0.0, 1.0]]
    let one = replace(MultiHeadAttention(2, 1), in_w=concat((eye, eye, eye), axis=1), out_w=eye)
    let x1 = [[[1.0, 0.0], [0.0, 2.0]]]
    print("by hand", err(one(x1, x1, x1), [[[0.669762, 0.660477], [0.055807, 1.888386]]]) < 1e-5)
    let causal = [[false, true], [false, false]]
    print("causal", err(one(x1, x1, x1, mask=causal), [[[1.0, 0.0], [0.055807, 1.888386]]]) < 1e-5)

    let m = replace(MultiHeadAttention(8, 2), in_b=normal(shape=(24,), seed=3) * 0.1, out_b=normal(shape=(8,), seed=4) * 0.1)
    let q = normal(shape=(3, 5, 8), seed=5)
    let kv = normal(shape=(3, 7, 8), seed=6)
    let v = normal(shape=(3, 7, 8), seed=7)
    print("shapes", m(q, q, q).shape, m(q, kv, v).shape)
    print("self-attention", err(m(q, q, q), reference_mha(m, q, q, q, none, 2)) < 1e-5)
    print("cross-attention", err(m(q, kv, v), reference_mha(m, q, kv, v, none, 2)) < 1e-5)
    let mask = arange(0, 7) > expand_dims(arange(0, 5), 1)
    print("bool mask", err(m(q, kv, v, mask=mask), reference_mha(m, q, kv, v, mask, 2)) < 1e-5)
    print("float mask", err(m(q, kv, v, mask=where(mask, -1e9, 0.0)), m(q, kv, v, mask=mask)) < 1e-6)

    let x = normal(shape=(2, 6, 8), seed=8)
    let post = TransformerEncoderBlock(8, 2, 16, dropout=0.0)
    let pre = TransformerEncoderBlock(8, 2, 16, dropout=0.0, norm_first=true)
    print("encoder block", post(x).shape, err(post(x), reference_block(post, x, false)) < 1e-5)
    print("pre-norm block", err(pre(x), reference_block(pre, x, true)) < 1e-5)
    # dropout: training differs from eval, eval equals the block without dropout
    let noisy = TransformerEncoderBlock(8, 2, 16, dropout=0.3, seed=11)
    let clean = TransformerEncoderBlock(8, 2, 16, dropout=0.0, seed=11)
    print("dropout", err(noisy(x), clean(x)) == 0.0, err(noisy(x, train=true, step=1), noisy(x)) > 0.01,
          err(clean(x, train=true, step=1), clean(x)) == 0.0)
    let (y, same) = post.apply(x, true, 0)
    print("apply", err(y, post(x)) == 0.0)
}
# CHECK: by hand true
# CHECK-NEXT: causal true
# CHECK-NEXT: shapes (3, 5, 8) (3, 5, 8)
# CHECK-NEXT: self-attention true
# CHECK-NEXT: cross-attention true
# CHECK-NEXT: bool mask true
# CHECK-NEXT: float mask true
# CHECK-NEXT: encoder block (2, 6, 8) true
# CHECK-NEXT: pre-norm block true
# CHECK-NEXT: dropout true true true
# CHECK-NEXT: apply true
