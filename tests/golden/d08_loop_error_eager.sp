# RUN: run --mode eager
# eager twin of d07_loop_error.sp: an error in the body of a dataset loop ends the program
def main() {
    for (x, y) in fashion_mnist("test", batch=10, prefetch=2) {
        print(y[0])
        assert sum(y) < 0, "stop here"
    }
}
# EXIT: 1
# CHECK: 9
# CHECK-ERR: d08_loop_error_eager.sp:6:9: error: assertion failed: stop here
