def main() {
    # expected-error@+1: unknown name 'softmaxx'
    print(softmaxx([1.0, 2.0]))
}
