# net is lowered twice, for grad and for the checker of annotated functions; its error is
# reported once.
# expected-error@+1: missing return in 'net', which is declared to return a value
def net(w: f32, x: f32) -> f32 {
    print(w * x)
}

def main() {
    print(grad(net)(1.0, 2.0))
}
