# the escapes are \n \t \r \0 \\ \" \'
def main() {
    # expected-error@+1: unknown escape sequence '\q' in string
    print("a\qb")
}
