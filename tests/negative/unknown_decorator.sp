# expected-error@+1: unknown decorator '@jitt' (known: @checkpoint, @custom_grad, @inline, @jit, @noinline, @stage)
@jitt
def f(x) = x * 2.0

def main() {
    print(f(1.0))
}
