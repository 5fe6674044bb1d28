# a keyword argument may appear once
def main() {
    let a = [[1.0, 2.0], [3.0, 4.0]]
    # expected-error@+1: keyword argument 'axis' is given twice
    print(sum(a, axis=0, axis=1))
}
