# std.nn layers' forward against values computed independently: hand-derived small cases and
# a python3 (standard library) reimplementation, run once; its results are pasted below and
# the script is at the end of this file. Weights are set with replace() so the numbers do not
# depend on the random initialisation.
import std.nn

def err(a, b) = max(abs(a - b))

def main() {
    # Dense: x @ w + b by hand: [[1, 0, -1], [2, 1, 0]] @ [[1, 2], [3, 4], [5, 6]] = [[-4, -4], [5, 8]]
    let x = [[1.0, 0.0, -1.0], [2.0, 1.0, 0.0]]
    let w = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    let d = replace(Dense(3, 2), w=w, b=[0.5, -0.5])
    print("dense", err(d(x), [[-3.5, -4.5], [5.5, 7.5]]) < 1e-6)
    let dn = replace(Dense(3, 2, bias=false), w=w)
    print("dense no bias", err(dn(x), [[-4.0, -4.0], [5.0, 8.0]]) < 1e-6, dn.b.shape)

    # Conv2d: stride 2, padding 1, bias; groups 2 without bias (python: conv2d below)
    let xc = reshape(arange(0, 32, dtype=f32) * 0.1 - 1.0, (1, 2, 4, 4))
    let c1 = replace(Conv2d(2, 2, 3, stride=2, padding=1), w=reshape(arange(0, 36, dtype=f32) * 0.05 - 0.4, (2, 2, 3, 3)),
                     b=[0.5, -0.25])
    print("conv2d", err(c1(xc), [[[[2.12, 3.12], [3.545, 4.88]], [[1.73, 4.53], [9.815, 17.09]]]]) < 1e-5)
    let c2 = replace(Conv2d(2, 2, 3, groups=2, bias=false), w=reshape(arange(0, 18, dtype=f32) * 0.1 - 0.9, (2, 1, 3, 3)))
    print("conv2d groups", err(c2(xc), [[[[3.03, 2.58], [1.23, 0.78]], [[4.74, 5.1], [6.18, 6.54]]]]) < 1e-5)

    # Pooling (python: pool below); average pooling counts padded zeros (count_include_pad)
    let xp = reshape(cast((arange(0, 32) * 7) % 11, f32) * 0.1 - 0.5, (1, 2, 4, 4))
    print("maxpool", err(MaxPool2d(2)(xp), [[[[0.2, 0.5], [0.3, 0.5]], [[0.4, 0.2], [0.5, 0.3]]]]) < 1e-6)
    print("maxpool s2 p1", err(MaxPool2d(3, stride=2, padding=1)(xp), [[[[0.2, 0.5], [0.3, 0.5]], [[0.4, 0.4], [0.5, 0.5]]]]) < 1e-6)
    print("maxpool s1", err(MaxPool2d(3, stride=1)(xp), [[[[0.4, 0.5], [0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]]]) < 1e-6)
    print("avgpool", err(AvgPool2d(2)(xp), [[[[-0.125, 0.175], [-0.025, 0.0]], [[0.075, -0.175], [0.175, -0.075]]]]) < 1e-6)
    print("avgpool s2 p1", err(AvgPool2d(3, stride=2, padding=1)(xp),
                               [[[[-0.055556, 0.066667], [-0.033333, 0.022222]], [[0.033333, -0.044444], [0.1, -0.022222]]]]) < 1e-5)

    # LayerNorm over the last axis, eps 1e-5 (python: ln below)
    let ln = replace(LayerNorm(4), weight=[1.0, 2.0, 0.5, -1.0], bias=[0.0, 1.0, 0.0, 0.5])
    print("layernorm", err(ln([[1.0, 2.0, 4.0, 9.0], [-1.0, 0.0, 0.0, 3.0]]),
                           [[-0.973328, -0.297771, 0.0, -1.122213], [-0.999998, 0.333335, -0.166666, -1.166663]]) < 1e-5)
    # eps matters: a row of two values +-1e-3 has variance 1e-6, so y = +-1e-3 / sqrt(1e-6 + 1e-5)
    print("layernorm eps", err(LayerNorm(2)([[1e-3, -1e-3]]), [[0.30151134, -0.30151134]]) < 1e-4)

    # Embedding: rows of the table
    let e = replace(Embedding(3, 2), weight=[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    print("embedding", err(e([[2, 0], [1, 1]]), [[[4.0, 5.0], [0.0, 1.0]], [[2.0, 3.0], [2.0, 3.0]]]) < 1e-6)

    # Activations (python: acts below)
    let a = [-3.0, -0.5, 0.0, 0.7, 7.0]
    print("relu6", err(relu6(a), [0.0, 0.0, 0.0, 0.7, 6.0]) < 1e-6)
    print("leaky_relu", err(leaky_relu(a), [-0.03, -0.005, 0.0, 0.7, 7.0]) < 1e-6)
    print("silu", err(silu(a), [-0.142278, -0.18877, 0.0, 0.467731, 6.993623]) < 1e-5)
    print("elu", err(elu(a), [-0.950213, -0.393469, 0.0, 0.7, 7.0]) < 1e-5)
    print("softplus", err(softplus(a), [0.048587, 0.474077, 0.693147, 1.103186, 7.000911]) < 1e-5)
    print("gelu_tanh", err(gelu_tanh(a), [-0.003637, -0.154286, 0.0, 0.53057, 7.0]) < 1e-5)
    print("gelu layer", err(GELU()(a), [-0.00405, -0.154269, 0.0, 0.530625, 7.0]) < 1e-5)

    # Sequential = the layers in order; Flatten keeps the batch axis
    let s = Sequential((Flatten(), Dense(4, 3), ReLU(), Dense(3, 1), Tanh()))
    let xs = reshape(arange(0, 8, dtype=f32) * 0.25 - 1.0, (2, 2, 2))
    let l = s.layers
    let manual = tanh(l[3](relu(l[1](reshape(xs, (2, 4))))))
    print("sequential", err(s(xs), manual) < 1e-6, s(xs).shape)
    let (y2, s2) = s.apply(xs, true, 0)
    print("sequential apply", err(y2, manual) < 1e-6, err(s2.layers[1].w, l[1].w) == 0.0)
}
# CHECK: dense true
# CHECK-NEXT: dense no bias true (0,)
# CHECK-NEXT: conv2d true
# CHECK-NEXT: conv2d groups true
# CHECK-NEXT: maxpool true
# CHECK-NEXT: maxpool s2 p1 true
# CHECK-NEXT: maxpool s1 true
# CHECK-NEXT: avgpool true
# CHECK-NEXT: avgpool s2 p1 true
# CHECK-NEXT: layernorm true
# CHECK-NEXT: layernorm eps true
# CHECK-NEXT: embedding true
# CHECK-NEXT: relu6 true
# CHECK-NEXT: leaky_relu true
# CHECK-NEXT: silu true
# CHECK-NEXT: elu true
# CHECK-NEXT: softplus true
# CHECK-NEXT: gelu_tanh true
# CHECK-NEXT: gelu layer true
# CHECK-NEXT: sequential true (2, 1)
# CHECK-NEXT: sequential apply true true
#
# The python3 script (standard library only) that computed the expected values:
#   import math
#   def conv2d(x, w, b, stride, pad, groups=1):
#       N=len(x); C=len(x[0]); H=len(x[0][0]); W=len(x[0][0][0])
#       O=len(w); Cg=len(w[0]); K=len(w[0][0])
#       Ho=(H+2*pad-K)//stride+1; Wo=(W+2*pad-K)//stride+1
#       og=O//groups
#       out=[[[[0.0]*Wo for _ in range(Ho)] for _ in range(O)] for _ in range(N)]
#       for n in range(N):
#           for o in range(O):
#               g=o//og
#               for i in range(Ho):
#                   for j in range(Wo):
#                       s=b[o] if b else 0.0
#                       for c in range(Cg):
#                           for ki in range(K):
#                               for kj in range(K):
#                                   hi=i*stride-pad+ki; wj=j*stride-pad+kj
#                                   if 0<=hi<H and 0<=wj<W:
#                                       s+=x[n][g*Cg+c][hi][wj]*w[o][c][ki][kj]
#                       out[n][o][i][j]=s
#       return out
#   def pool(x, K, stride, pad, kind):
#       N=len(x); C=len(x[0]); H=len(x[0][0]); W=len(x[0][0][0])
#       Ho=(H+2*pad-K)//stride+1; Wo=(W+2*pad-K)//stride+1
#       out=[[[[0.0]*Wo for _ in range(Ho)] for _ in range(C)] for _ in range(N)]
#       for n in range(N):
#           for c in range(C):
#               for i in range(Ho):
#                   for j in range(Wo):
#                       vals=[]
#                       for ki in range(K):
#                           for kj in range(K):
#                               hi=i*stride-pad+ki; wj=j*stride-pad+kj
#                               if 0<=hi<H and 0<=wj<W: vals.append(x[n][c][hi][wj])
#                       out[n][c][i][j]=max(vals) if kind=='max' else sum(vals)/(K*K)
#       return out
#   def arange4(shape, scale, shift):
#       N,C,H,W=shape; k=0; out=[]
#       for n in range(N):
#           a=[]
#           for c in range(C):
#               b=[]
#               for h in range(H):
#                   r=[]
#                   for w in range(W):
#                       r.append(k*scale+shift); k+=1
#                   b.append(r)
#               a.append(b)
#           out.append(a)
#       return out
#   def fmt(v):
#       if isinstance(v, list): return '['+', '.join(fmt(e) for e in v)+']'
#       return repr(round(v, 6))
#   x = arange4((1, 2, 4, 4), 0.1, -1.0)
#   w = arange4((2, 2, 3, 3), 0.05, -0.4)
#   print(fmt(conv2d(x, w, [0.5, -0.25], 2, 1)))
#   print(fmt(conv2d(x, arange4((2, 1, 3, 3), 0.1, -0.9), None, 1, 0, groups=2)))
#   xp = [[[[(((c * 16 + h * 4 + w) * 7) % 11) * 0.1 - 0.5 for w in range(4)] for h in range(4)] for c in range(2)]]
#   for k, s, p, kind in [(2, 2, 0, 'max'), (3, 2, 1, 'max'), (3, 1, 0, 'max'), (2, 2, 0, 'avg'), (3, 2, 1, 'avg')]:
#       print(fmt(pool(xp, k, s, p, kind)))
#   def ln(r, wt, bs, eps=1e-5):
#       m = sum(r) / len(r); v = sum((a - m) ** 2 for a in r) / len(r)
#       return [(a - m) / math.sqrt(v + eps) * wt[i] + bs[i] for i, a in enumerate(r)]
#   print(fmt([ln(r, [1, 2, 0.5, -1], [0, 1, 0, 0.5]) for r in [[1, 2, 4, 9], [-1, 0, 0, 3]]]))
#   acts = [-3.0, -0.5, 0.0, 0.7, 7.0]
#   print(fmt([a / (1 + math.exp(-a)) for a in acts]))                     # silu
#   print(fmt([a if a > 0 else math.expm1(a) for a in acts]))              # elu
#   print(fmt([math.log1p(math.exp(a)) for a in acts]))                    # softplus
#   print(fmt([0.5 * a * (1 + math.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3))) for a in acts]))
#   print(fmt([0.5 * a * (1 + math.erf(a / math.sqrt(2))) for a in acts]))  # gelu
