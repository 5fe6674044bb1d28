def main() {
    # expected-error@+1: fashion_mnist: cannot find the test images: '/nonexistent/data/t10k-images-idx3-ubyte.gz' does not exist
    let ds = fashion_mnist("test", root="/nonexistent/data")
}
