# a block opened with ':' as in Python: the error says braces open blocks
def main() {
    # expected-error@+1: expected '{' but found ':' (a block is written in braces, `{ ... }`, not after ':' as in Python)
    for i in range(3):
        print(i)
}
