# methods call sibling methods unqualified or through self
model M() {
    param w: f32[2] = ones()
    def twice(t) = t * 2.0
    def forward(x) = twice(x) * w + self.twice(w)
}
def main() {
    let m = M()
    print(m([1.0, 2.0]))
    print(grad(fn (x) => sum(m(x)))([1.0, 2.0]))
}
# CHECK: [4.0, 6.0]
# CHECK-NEXT: [2.0, 2.0]
