# set_device names a device Spora runs on
def main() {
    # expected-error@+1: set_device takes "cpu" or "cuda", not "tpu"
    set_device("tpu")
    print(1)
}
