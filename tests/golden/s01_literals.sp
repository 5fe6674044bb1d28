# literals: integers, floats, booleans, strings, none-free printing
def main() {
    print(42)
    print(1.5)
    print(1e-3)
    print(2.5e3)
    print(true, false)
    print("hello\tworld")
    print(.5, 1.)
}
# CHECK: 42
# CHECK-NEXT: 1.5
# CHECK-NEXT: 0.001
# CHECK-NEXT: 2500.0
# CHECK-NEXT: true false
# CHECK-NEXT: hello	world
# CHECK-NEXT: 0.5 1.0
