# Dropout: identity in eval mode; in training each element is zeroed with probability p and
# the rest scaled by 1 / (1 - p); the mask depends on the layer's seed and on the step, which
# may be a run-time integer (a loop variable, the optimizer's step counter). Statistics over
# n = 10000 elements get tolerances of 4 standard errors (sqrt(0.21 / n) = 0.0046).
import std.nn

def frac(b) = mean(cast(b, f32))

def main() {
    let x = ones(shape=(100, 100))
    let d = Dropout(0.3, seed=1)
    print("eval", max(abs(d(x) - x)), max(abs(Dropout(0.0)(x, true, 5) - x)), max(abs(Dropout(1.0)(x, true, 5))))
    let y = d(x, true, 0)
    let kept = y > 0.0
    print("values", frac(kept or y == 0.0), frac(abs(y - 1.0 / 0.7) < 1e-6 or y == 0.0))
    print("keep rate", abs(frac(kept) - 0.7) < 0.02, abs(mean(y) - 1.0) < 0.03)
    # neighbours independent: both kept with probability 0.49
    print("independent", abs(frac(kept[:, 0:99] and kept[:, 1:100]) - 0.49) < 0.02)
    # the same step gives the same mask; another step an independent one (agreement 0.3^2 + 0.7^2)
    print("same step", frac((d(x, true, 0) > 0.0) == kept))
    print("other step", abs(frac((d(x, true, 1) > 0.0) == kept) - 0.58) < 0.02, abs(frac((d(x, true, 1000) > 0.0) == kept) - 0.58) < 0.02)
    print("other layer", abs(frac((Dropout(0.3, seed=2)(x, true, 0) > 0.0) == kept) - 0.58) < 0.02)
    # a run-time step (a loop variable in graph mode) gives the same masks as compile-time steps
    var total = zeros(shape=(100, 100))
    for step in range(3) {
        total = total + d(x, true, step)
    }
    let same = frac(total == d(x, true, 0) + d(x, true, 1) + d(x, true, 2))
    print("run-time step", same, frac(d(x, true, 2) == d(x, true, 1)) < 0.9)
    # the derivative is the mask scaled by 1 / (1 - p)
    let g = grad(fn (z) => sum(d(z, true, 0) * 2.0))(x)
    print("gradient", max(abs(g - where(kept, 2.0 / 0.7, 0.0))) < 1e-5)
}
# CHECK: eval 0.0 0.0 0.0
# CHECK-NEXT: values 1.0 1.0
# CHECK-NEXT: keep rate true true
# CHECK-NEXT: independent true
# CHECK-NEXT: same step 1.0
# CHECK-NEXT: other step true true
# CHECK-NEXT: other layer true
# CHECK-NEXT: run-time step 1.0 true
# CHECK-NEXT: gradient true
