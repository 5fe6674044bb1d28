# an if on a run-time condition: reassigned variables flow out of both branches
def clamp_sum(x: f32[N]) -> f32 {
    var s = sum(x)
    if s > 10.0 {
        s = 10.0
    } else if s < 0.0 {
        s = 0.0
    }
    return s
}

def main() {
    print(clamp_sum([4.0, 5.0, 6.0]))
    print(clamp_sum([-4.0, 1.0]))
    print(clamp_sum([1.0, 2.0]))
}
# CHECK: 10.0
# CHECK-NEXT: 0.0
# CHECK-NEXT: 3.0
