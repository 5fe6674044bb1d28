# set_amp takes one of MindSpore's AMP levels
def main() {
    # expected-error@+1: set_amp: unknown level "O4" (O0, O1, O2 or O3)
    set_amp("O4")
    print(1)
}
