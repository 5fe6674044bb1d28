# a if c else b, static and run-time, chained
def sign_of(x: f32) -> f32 = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)

def main() {
    print(sign_of(3.0), sign_of(-2.0), sign_of(0.0))
    print(10 if 2 > 1 else 20)
}
# CHECK: 1.0 -1.0 0.0
# CHECK-NEXT: 10
