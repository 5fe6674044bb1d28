# module-level bindings are constants
# expected-error@+1: module-level 'var' is not allowed; use 'let' for a constant
var counter = 0

def main() {
    print(counter)
}
