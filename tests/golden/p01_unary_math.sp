# elementwise unary primitives
def main() {
    let x = [0.0, 1.0, 4.0]
    print(sqrt(x))
    print(exp([0.0]), log([1.0]), abs([-2.0, 3.0]), neg([1.0]))
    print(rsqrt([4.0, 0.25]))
    print(relu([-1.0, 0.0, 2.0]))
    print(tanh([0.0]), sigmoid([0.0]), sin([0.0]), cos([0.0]))
    print(gelu([0.0, 1.0]))
    print(square([3.0]), reciprocal([4.0]), sign([-2.0, 0.0, 5.0]))
    print(floor([-1.5, 1.5]), ceil([-1.5, 1.5]))
    print(erf([0.0]), log1p([0.0]), expm1([0.0]))
}
# CHECK: [0.0, 1.0, 2.0]
# CHECK-NEXT: [1.0] [0.0] [2.0, 3.0] [-1.0]
# CHECK-NEXT: [0.5, 2.0]
# CHECK-NEXT: [0.0, 0.0, 2.0]
# CHECK-NEXT: [0.0] [0.5] [0.0] [1.0]
# CHECK-NEXT: [0.0, 0.8413448]
# CHECK-NEXT: [9.0] [0.25] [-1.0, 0.0, 1.0]
# CHECK-NEXT: [-2.0, 1.0] [-1.0, 2.0]
# CHECK-NEXT: [0.0] [0.0] [0.0]
