# keyword arguments come after the positional ones
def main() {
    let a = [[1.0, 2.0], [3.0, 4.0]]
    # expected-error@+1: positional argument follows keyword argument
    print(sum(axis=0, a))
}
