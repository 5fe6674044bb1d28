# a character that is no part of the language
def main() {
    let a = 1.0
    # expected-error@+1: unexpected character '$'
    print(a $ 2.0)
}
