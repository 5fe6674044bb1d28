# print: several values, tuples, nested tuples, models
model P() {
    param a: f32[2] = ones()
}

def main() {
    print("x", 1, 2.0, [3.0])
    print((1, (2.0, "s")))
    print((5,))
    print(P())
}
# CHECK: x 1 2.0 [3.0]
# CHECK-NEXT: (1, (2.0, s))
# CHECK-NEXT: (5,)
# CHECK-NEXT: P{a: [1.0, 1.0]}
