# tuple destructuring in let, var, reassignment and nested patterns; _ discards
def pair(a) = (a, a * 2.0)

def main() {
    let (a, (b, c)) = (1, (2, 3))
    var (p, q) = pair([1.0, 2.0])
    (p, q) = (q, p)
    let (_, second) = pair(5.0)
    print(a + b + c)
    print(p, q)
    print(second)
}
# CHECK: 6
# CHECK-NEXT: [2.0, 4.0] [1.0, 2.0]
# CHECK-NEXT: 10.0
