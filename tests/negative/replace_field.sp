# replace(m, field=value) names an existing field and keeps its type
model Lin() {
    param w: f32[2] = ones()
}

def f(x) = (sum(x), x, x)

def main() {
    let m = Lin()
    # expected-error@+1: has no field 'v' (fields: w)
    let a = replace(m, v=[1.0, 2.0])
    # expected-error@+1: replace: field 'w' is f32[2] but the new value is f32[3]
    let b = replace(m, w=[1.0, 2.0, 3.0])
    # expected-error@+1: value_and_grad with has_aux=true needs a function returning (value, aux)
    let c = value_and_grad(f, has_aux=true)([1.0])
}
