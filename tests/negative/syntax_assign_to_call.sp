# only names and tuples of names can be assigned
def main() {
    var x = [1.0, 2.0]
    # expected-error@+1: cannot assign to an indexed element
    x[0] = 3.0
    print(x)
}
