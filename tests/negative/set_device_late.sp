# set_device chooses the device before anything runs: it cannot follow other statements
def main() {
    print(1)
    # expected-error@+1: set_device(...) must be among the first statements of main (set_mode, set_device, set_amp and set_parallel come before anything runs)
    set_device("cpu")
}
