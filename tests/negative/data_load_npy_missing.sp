def main() {
    # expected-error@+1: cannot open '/nonexistent/x.npy': No such file or directory
    print(load_npy("/nonexistent/x.npy"))
}
