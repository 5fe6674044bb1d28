# std.losses: loss functions and metrics written in Spora, with PyTorch's semantics
# (torch.nn.functional), differentiated by Spora's own AD. `import std.losses`.
#
# reduction: "mean" (default), "sum" or "none" (the per-element losses).
# Note: importing std.losses makes `cross_entropy` this Spora function (a superset of the
# primitive of the same name: label_smoothing, weight, ignore_index).

def reduce(losses, reduction) {
    if reduction == "mean" {
        return mean(losses)
    }
    if reduction == "sum" {
        return sum(losses)
    }
    assert reduction == "none", "reduction must be \"mean\", \"sum\" or \"none\""
    return losses
}

# The negative log-likelihood of integer class labels under log-probabilities (F.nll_loss).
# log_probs [N, C] (or [C] with a scalar label), labels integer [N]. weight: none or a [C]
# tensor of class weights; "mean" divides by the total weight of the counted labels. Labels
# equal to ignore_index count for nothing.
def nll_loss(log_probs, labels, reduction = "mean", weight = none, ignore_index = -100) {
    let c = log_probs.shape[len(log_probs.shape) - 1]
    let valid = labels != ignore_index
    let safe = where(valid, labels, 0)
    let onehot = one_hot(safe, c, dtype=log_probs.dtype) * expand_dims(cast(valid, log_probs.dtype), -1)
    var w = onehot
    if weight != none {
        w = onehot * weight
    }
    let losses = -sum(w * log_probs, axis=-1)
    if reduction == "mean" {
        return sum(losses) / sum(w)
    }
    return reduce(losses, reduction)
}

def nll(log_probs, labels, reduction = "mean", weight = none, ignore_index = -100) {
    return nll_loss(log_probs, labels, reduction, weight, ignore_index)
}

# Softmax cross-entropy of logits [N, C] (F.cross_entropy): labels are integer classes [N]
# (see nll_loss for weight and ignore_index) or float class probabilities [N, C] (soft
# targets). label_smoothing e mixes the target with the uniform distribution:
# (1 - e) target + e / C.
def cross_entropy(logits, labels, reduction = "mean", label_smoothing = 0.0, weight = none, ignore_index = -100) {
    let logp = log_softmax(logits, axis=-1)
    let c = logits.shape[len(logits.shape) - 1]
    if labels.dtype == f32 or labels.dtype == f64 {
        var target = labels
        if label_smoothing > 0.0 {
            target = labels * (1.0 - label_smoothing) + label_smoothing / c
        }
        var wt = target
        if weight != none {
            wt = target * weight
        }
        return reduce(-sum(wt * logp, axis=-1), reduction)
    }
    let nll_part = nll_loss(logp, labels, reduction, weight, ignore_index)
    if label_smoothing == 0.0 {
        return nll_part
    }
    # The uniform part: -sum_c w_c logp_c / C per counted label (PyTorch), reduced like the
    # nll part ("mean" divides by the same total weight).
    let valid = cast(labels != ignore_index, logp.dtype)
    var wlogp = logp
    if weight != none {
        wlogp = logp * weight
    }
    let smooth = -sum(wlogp, axis=-1) * valid / c
    var smooth_part = reduce(smooth, reduction)
    if reduction == "mean" {
        var denom = sum(valid)
        if weight != none {
            denom = sum(gather(weight, where(labels != ignore_index, labels, 0), axis=0) * valid)
        }
        smooth_part = sum(smooth) / denom
    }
    return nll_part * (1.0 - label_smoothing) + smooth_part * label_smoothing
}

# (pred - target)^2 (F.mse_loss).
def mse_loss(pred, target, reduction = "mean") = reduce(square(pred - target), reduction)
def mse(pred, target, reduction = "mean") = mse_loss(pred, target, reduction)

# |pred - target| (F.l1_loss).
def l1_loss(pred, target, reduction = "mean") = reduce(abs(pred - target), reduction)

# Huber-like smooth L1 (F.smooth_l1_loss): 0.5 d^2 / beta where |d| < beta, else |d| - beta/2.
def smooth_l1_loss(pred, target, reduction = "mean", beta = 1.0) {
    let d = abs(pred - target)
    return reduce(where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction)
}

# Binary cross-entropy on logits, stable for large |x| (F.binary_cross_entropy_with_logits):
# l = (1 - t) x + (1 + (pos_weight - 1) t) (log(1 + exp(-|x|)) + max(-x, 0)), times weight.
def binary_cross_entropy_with_logits(logits, targets, reduction = "mean", weight = none, pos_weight = none) {
    let softplus_neg = log1p(exp(-abs(logits))) + maximum(-logits, 0.0)
    var losses = (1.0 - targets) * logits + softplus_neg
    if pos_weight != none {
        losses = (1.0 - targets) * logits + (1.0 + (pos_weight - 1.0) * targets) * softplus_neg
    }
    if weight != none {
        losses = losses * weight
    }
    return reduce(losses, reduction)
}

# Binary cross-entropy on probabilities (F.binary_cross_entropy); logs clamped at -100.
def binary_cross_entropy(probs, targets, reduction = "mean", weight = none) {
    let lp = maximum(log(probs), -100.0)
    let lq = maximum(log(1.0 - probs), -100.0)
    var losses = -(targets * lp + (1.0 - targets) * lq)
    if weight != none {
        losses = losses * weight
    }
    return reduce(losses, reduction)
}

# ------------------------------------------------------------------ metrics
# The fraction of rows whose largest logit is at the label (ties: the first maximum).
def accuracy(logits, labels) = mean(cast(argmax(logits, axis=-1) == cast(labels, i32), f32))

# The number of correct rows (f32), for accumulating over batches.
def correct(logits, labels) = sum(cast(argmax(logits, axis=-1) == cast(labels, i32), f32))

# The fraction of rows whose label is among the k largest logits (ties count for the label).
def top_k_accuracy(logits, labels, k: int) {
    let c = logits.shape[len(logits.shape) - 1]
    let at_label = sum(logits * one_hot(cast(labels, i32), c, dtype=logits.dtype), axis=-1, keepdims=true)
    let above = sum(cast(logits > at_label, i32), axis=-1)
    return mean(cast(above < k, f32))
}
