# bf16 and f32 do not mix implicitly (set_amp inserts casts inside models; elsewhere, cast)
def main() {
    let a = cast(ones(shape=(2,)), bf16)
    # expected-error@+1: add operand types do not match: bf16[2] and f32[2] (mixed precision is explicit: cast one of them, e.g. cast(x, f32), or let set_amp insert the casts)
    print(a + ones(shape=(2,)))
}
