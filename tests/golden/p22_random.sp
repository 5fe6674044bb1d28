# seeded random numbers: the same seed gives the same stream; statistics are right
def count(b) = sum(cast(b, i32))

def main() {
    let a = normal(shape=(10000,), seed=3)
    let b = normal(shape=(10000,), seed=3)
    let c = normal(shape=(10000,), seed=4)
    print(count(a == b), count(a == c) < 10)
    print(abs(mean(a)) < 0.05, abs(mean(a * a) - 1.0) < 0.05)
    let u = uniform(2.0, 4.0, shape=(10000,), seed=1)
    print(min(u) >= 2.0, max(u) < 4.0, abs(mean(u) - 3.0) < 0.05)
    let n = normal(5.0, 0.5, shape=(10000,), seed=9)
    print(abs(mean(n) - 5.0) < 0.05)
}
# CHECK: 10000 true
# CHECK-NEXT: true true
# CHECK-NEXT: true true true
# CHECK-NEXT: true
