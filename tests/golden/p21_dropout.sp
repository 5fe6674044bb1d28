# dropout: identity when not training or p = 0; otherwise keeps elements scaled by 1/(1-p)
def count(b) = sum(cast(b, i32))

def main() {
    let x = ones(shape=(1000,))
    print(sum(dropout(x, p=0.5, training=false)))
    print(sum(dropout(x, p=0.0)))
    let y = dropout(x, p=0.5, seed=7)
    print(count(y == 0.0) + count(y == 2.0))
    print(sum(y) > 800.0 and sum(y) < 1200.0)
    print(count(dropout(x, p=0.5, seed=7) == y))
}
# CHECK: 1000.0
# CHECK-NEXT: 1000.0
# CHECK-NEXT: 1000
# CHECK-NEXT: true
# CHECK-NEXT: 1000
