# A recursion whose compile-time argument changes at every call (a number literal, so 1.0, 2.0,
# 3.0, ...) needs a new specialisation each time: an error after 200 nested ones, not a stack
# overflow.
def f(x) = f(x + 1.0)  # expected-error: 'f' is specialised again for new compile-time arguments

def main() {
    print(f(1.0))
}
