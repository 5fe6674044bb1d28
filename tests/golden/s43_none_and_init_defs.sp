# `x == none` is decided at compile time (optional arguments); an initialiser written in Spora
# gets the field's shape, dtype and seed like the primitives do
def shifted(x, shift = none) {
    if shift == none {
        return x
    }
    return x + shift
}

def box(low, high, shape = (), dtype = f32, seed = 0) = uniform(low, high, shape=shape, dtype=dtype, seed=seed)

model Two() {
    param a: f32[2, 3] = box(5.0, 6.0)
    param b: f32[2, 3] = box(5.0, 6.0)
    param c: f32[4] = box(0.0, 1.0, seed=7)
}

def main() {
    print(shifted(1.0), shifted(1.0, 2.0), none != 3, none == none)
    let m = Two()
    print(m.a.shape, m.a.dtype == f32, min(m.a) >= 5.0, max(m.a) < 6.0)
    print(sum(cast(m.a == m.b, i32)))
    print(sum(cast(m.c == uniform(shape=(4,), seed=7), i32)))
}
# CHECK: 1.0 3.0 true true
# CHECK-NEXT: (2, 3) true true true
# CHECK-NEXT: 0
# CHECK-NEXT: 4
