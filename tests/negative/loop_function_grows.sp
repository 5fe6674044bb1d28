# a loop variable that wraps the function it held: the set of functions it may hold never
# closes, and the error says what a loop can carry instead (graph mode: `spora check`; eager mode
# runs it, every function there being a value it holds)
def main() {
    let w = ones([3])
    var f = fn (x) => x * w
    # expected-error@+1: variable 'f' holds a new function after each iteration of this loop: each iteration builds one from the one before, so after 9 tries the set of functions it may hold still grows; a loop can carry a function chosen among a fixed set (assign it one of several functions, not one that wraps its previous value)
    for i in range(3) {
        f = fn (x) => f(x) * 2.0
    }
    print(f(w))
}
