# std.losses against values computed independently (python3 standard library, the script at
# the end, run once) and by hand.
import std.losses

def err(a, b) = max(abs(a - b))

def main() {
    let l = [[1.0, 2.0, 3.0], [1.0, -1.0, 0.5]]
    let y = [2, 0]
    print("cross_entropy", err(cross_entropy(l, y), 0.481281) < 1e-5, err(cross_entropy(l, y, reduction="sum"), 0.962563) < 1e-5,
          err(cross_entropy(l, y, reduction="none"), [0.407606, 0.554957]) < 1e-5)
    print("nll", err(nll_loss(log_softmax(l, axis=-1), y), 0.481281) < 1e-5, err(nll(log_softmax(l, axis=-1), y, reduction="sum"), 0.962563) < 1e-5)
    print("label smoothing", err(cross_entropy(l, y, label_smoothing=0.1), 0.572948) < 1e-5,
          err(cross_entropy(l, y, reduction="none", label_smoothing=0.1), [0.507606, 0.63829]) < 1e-5)
    print("class weights", err(cross_entropy(l, y, weight=[1.0, 2.0, 0.5]), 0.50584) < 1e-5,
          err(cross_entropy(l, y, weight=[1.0, 2.0, 0.5], label_smoothing=0.2), 0.921071) < 1e-5)
    print("ignore_index", err(cross_entropy(l, [2, -100]), 0.407606) < 1e-5, err(cross_entropy(l, [-100, 0], label_smoothing=0.1), 0.63829) < 1e-5)
    let soft = [[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]
    print("soft targets", err(cross_entropy(l, soft), 0.831281) < 1e-5,
          err(cross_entropy(l, soft, label_smoothing=0.1, weight=[1.0, 2.0, 0.5]), 1.085974) < 1e-5)
    # agrees with the cross_entropy primitive's definition: logsumexp(l) - l[y]
    let big = normal(shape=(16, 10), seed=1) * 3.0
    let labels = argmax(normal(shape=(16, 10), seed=2), axis=1)
    print("against logsumexp", err(cross_entropy(big, labels, reduction="none"),
                                   logsumexp(big, axis=1) - sum(big * one_hot(labels, 10), axis=1)) < 1e-5)

    # by hand: diffs 1, 0, -2: squares 1, 0, 4; smooth L1 (beta 1) 0.5, 0, 1.5
    let p = [1.0, 2.0, 3.0]
    let t = [0.0, 2.0, 5.0]
    print("mse", err(mse_loss(p, t), 5.0 / 3.0) < 1e-6, mse(p, t, reduction="sum"), mse_loss(p, t, reduction="none"))
    print("l1", err(l1_loss(p, t), 1.0) < 1e-6, "smooth_l1", err(smooth_l1_loss(p, t), 2.0 / 3.0) < 1e-6,
          smooth_l1_loss(p, t, reduction="none", beta=4.0))

    let x = [-2.0, 0.0, 3.0, 50.0, -50.0]
    let yt = [0.0, 1.0, 1.0, 0.0, 1.0]
    print("bce with logits", err(binary_cross_entropy_with_logits(x, yt, reduction="none"), [0.126928, 0.693147, 0.048587, 50.0, 50.0]) < 1e-5,
          err(binary_cross_entropy_with_logits(x, yt), 20.173733) < 1e-4)
    print("pos_weight", err(binary_cross_entropy_with_logits(x, yt, reduction="none", weight=[1.0, 2.0, 3.0, 4.0, 5.0], pos_weight=2.0),
                            [0.126928, 2.772589, 0.291524, 200.0, 500.0]) < 1e-4)
    print("bce", err(binary_cross_entropy([0.1, 0.5, 0.9, 0.0], [0.0, 1.0, 1.0, 1.0], reduction="none"), [0.105361, 0.693147, 0.105361, 100.0]) < 1e-5)
    # logits and probabilities agree
    print("bce agree", err(binary_cross_entropy(sigmoid(x[0:3]), yt[0:3]), binary_cross_entropy_with_logits(x[0:3], yt[0:3])) < 1e-5)

    # metrics by hand: row argmaxes 1, 0, 2, 0 against labels 1, 1, 2, 2; the label ranks 1, 3, 1, 2
    let logits = [[0.1, 0.9, 0.0], [0.8, 0.05, 0.15], [0.0, 0.2, 0.7], [0.5, 0.1, 0.4]]
    let labels2 = [1, 1, 2, 2]
    print("accuracy", accuracy(logits, labels2), correct(logits, labels2), top_k_accuracy(logits, labels2, 1), top_k_accuracy(logits, labels2, 2), top_k_accuracy(logits, labels2, 3))
}
# CHECK: cross_entropy true true true
# CHECK-NEXT: nll true true
# CHECK-NEXT: label smoothing true true
# CHECK-NEXT: class weights true true
# CHECK-NEXT: ignore_index true true
# CHECK-NEXT: soft targets true true
# CHECK-NEXT: against logsumexp true
# CHECK-NEXT: mse true 5.0 [1.0, 0.0, 4.0]
# CHECK-NEXT: l1 true smooth_l1 true [0.125, 0.0, 0.5]
# CHECK-NEXT: bce with logits true true
# CHECK-NEXT: pos_weight true
# CHECK-NEXT: bce true
# CHECK-NEXT: bce agree true
# CHECK-NEXT: accuracy 0.5 2.0 0.5 0.75 1.0
#
# The python3 script (standard library only) that computed the expected values:
#   import math
#   def fmt(v):
#       if isinstance(v, list): return '[' + ', '.join(fmt(e) for e in v) + ']'
#       return repr(round(v, 6))
#   def log_softmax(r):
#       m = max(r); s = math.log(sum(math.exp(a - m) for a in r)) + m
#       return [a - s for a in r]
#   def ce(logits, labels, reduction='mean', eps=0.0, weight=None, ignore=-100):
#       C = len(logits[0]); w = weight or [1.0] * C
#       lp = [log_softmax(r) for r in logits]
#       if isinstance(labels[0], list):  # soft targets
#           t = [[(1 - eps) * a + eps / C for a in row] for row in labels]
#           l = [-sum(w[c] * t[i][c] * lp[i][c] for c in range(C)) for i in range(len(lp))]
#           return sum(l) / len(l) if reduction == 'mean' else sum(l) if reduction == 'sum' else l
#       nll = [0.0 if y == ignore else -w[y] * lp[i][y] for i, y in enumerate(labels)]
#       smooth = [0.0 if y == ignore else -sum(w[c] * lp[i][c] for c in range(C)) / C for i, y in enumerate(labels)]
#       den = sum(w[y] for y in labels if y != ignore)
#       if reduction == 'mean': return (1 - eps) * sum(nll) / den + eps * sum(smooth) / den
#       if reduction == 'sum': return (1 - eps) * sum(nll) + eps * sum(smooth)
#       return [(1 - eps) * a + eps * b for a, b in zip(nll, smooth)]
#   L = [[1.0, 2.0, 3.0], [1.0, -1.0, 0.5]]
#   print('ce', fmt(ce(L, [2, 0])), fmt(ce(L, [2, 0], 'sum')), fmt(ce(L, [2, 0], 'none')))
#   print('ce smooth', fmt(ce(L, [2, 0], eps=0.1)), fmt(ce(L, [2, 0], 'none', eps=0.1)))
#   print('ce weight', fmt(ce(L, [2, 0], weight=[1.0, 2.0, 0.5])), fmt(ce(L, [2, 0], weight=[1.0, 2.0, 0.5], eps=0.2)))
#   print('ce ignore', fmt(ce(L, [2, -100])), fmt(ce(L, [-100, 0], eps=0.1)))
#   S = [[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]
#   print('ce soft', fmt(ce(L, S)), fmt(ce(L, S, eps=0.1, weight=[1.0, 2.0, 0.5])))
#   x = [-2.0, 0.0, 3.0, 50.0, -50.0]; t = [0.0, 1.0, 1.0, 0.0, 1.0]
#   def bce_logits(x, t, pw=1.0, w=None):
#       w = w or [1.0] * len(x)
#       return [w[i] * ((1 - t[i]) * x[i] + (1 + (pw - 1) * t[i]) * (math.log1p(math.exp(-abs(x[i]))) + max(-x[i], 0.0))) for i in range(len(x))]
#   print('bce logits', fmt(bce_logits(x, t)), fmt(sum(bce_logits(x, t)) / 5), fmt(bce_logits(x, t, 2.0, [1, 2, 3, 4, 5])))
#   p = [0.1, 0.5, 0.9, 0.0]; tt = [0.0, 1.0, 1.0, 1.0]
#   print('bce', fmt([-(tt[i] * max(math.log(p[i]) if p[i] > 0 else -1e9, -100) + (1 - tt[i]) * max(math.log(1 - p[i]), -100)) for i in range(4)]))
