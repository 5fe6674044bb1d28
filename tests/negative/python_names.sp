# names a student brings from Python: Spora's words for them, and the nearest name for a typo
def main() {
    let total = 1.0
    # expected-error@+1: unknown name 'True' (Spora writes true)
    let a = True
    # expected-error@+1: unknown name 'None' (Spora writes none)
    let b = None
    # expected-error@+1: unknown name 'totl' (did you mean 'total'?)
    print(totl)
    # expected-error@+1: unknown name 'value_and_gard' (did you mean 'value_and_grad'?)
    print(value_and_gard(fn (x) => x * x)(2.0))
}
