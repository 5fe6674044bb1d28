# set_amp's low-precision dtype is a 16-bit float
def main() {
    # expected-error@+1: set_amp: the low-precision dtype is bf16 or f16, not f32
    set_amp("O1", f32)
    print(1)
}
