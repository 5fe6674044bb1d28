# a string must close on its own line
def main() {
    # expected-error@+1: unterminated string
    print("hello)
}
