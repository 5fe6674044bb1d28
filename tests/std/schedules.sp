# std.optim learning-rate schedules at steps 0..11 against PyTorch's closed forms (python3,
# the script at the end, run once). Schedules are elementwise in the step, so a vector of
# steps gives every value at once; a run-time scalar step (a loop) gives the same values.
import std.optim

def err(a, b) = max(abs(a - b))

def main() {
    let t = arange(0, 12)
    print("step_lr", err(step_lr(1.0, 3, 0.5)(t), [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125, 0.125, 0.125]) < 1e-6)
    print("multistep_lr", err(multistep_lr(1.0, (2, 5))(t), [1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01]) < 1e-6)
    print("exponential_lr", err(exponential_lr(2.0, 0.9)(t),
                                [2.0, 1.8, 1.62, 1.458, 1.3122, 1.18098, 1.062882, 0.9565938, 0.8609344, 0.774841, 0.6973569, 0.6276212]) < 1e-6)
    print("cosine_annealing_lr", err(cosine_annealing_lr(1.0, 10, eta_min=0.1)(t),
                                     [1.0, 0.9779754, 0.9140576, 0.8145034, 0.6890576, 0.55, 0.4109424, 0.2854966, 0.1859424, 0.1220246, 0.1, 0.1220246]) < 1e-6)
    print("linear_warmup", err(linear_warmup(0.5, 4)(t), [0.0, 0.125, 0.25, 0.375, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]) < 1e-6)
    let wc = warmup_cosine(0.1, 2, 10, eta_min=0.01)
    let want = [0.0, 0.05, 0.1, 0.0965746, 0.0868198, 0.0722208, 0.055, 0.0377792, 0.0231802, 0.0134254, 0.01, 0.01]
    print("warmup_cosine", err(wc(t), want) < 1e-6, err(constant_lr(0.3)(t), 0.3) < 1e-7)
    # a scalar step, compile-time or run-time (a loop variable), gives the same values
    var worst = 0.0
    for k in range(12) {
        worst = maximum(worst, abs(wc(k) - want[k]))
    }
    print("scalar steps", worst < 1e-6, err(wc(7), want[7]) < 1e-6)
}
# CHECK: step_lr true
# CHECK-NEXT: multistep_lr true
# CHECK-NEXT: exponential_lr true
# CHECK-NEXT: cosine_annealing_lr true
# CHECK-NEXT: linear_warmup true
# CHECK-NEXT: warmup_cosine true true
# CHECK-NEXT: scalar steps true true
#
# The python3 script (standard library only) that computed the expected values:
#   # PyTorch's closed forms (StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR) and the
#   # warm-up schedules documented in lang/std/optim.sp, for steps 0..11.
#   import math
#   def fmt(v): return '[' + ', '.join(repr(round(x, 7)) for x in v) + ']'
#   T = range(12)
#   print(fmt([1.0 * 0.5 ** (t // 3) for t in T]))
#   print(fmt([1.0 * 0.1 ** sum(1 for m in (2, 5) if t >= m) for t in T]))
#   print(fmt([2.0 * 0.9 ** t for t in T]))
#   print(fmt([0.1 + 0.9 * (1 + math.cos(math.pi * t / 10)) / 2 for t in T]))
#   print(fmt([0.5 * min(t / 4, 1) for t in T]))
#   print(fmt([0.1 * t / 2 if t < 2 else 0.01 + 0.09 * 0.5 * (1 + math.cos(math.pi * min((t - 2) / 8, 1))) for t in T]))
