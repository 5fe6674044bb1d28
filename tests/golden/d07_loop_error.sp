# an error inside a dataset loop ends the program with the error at its line: the prefetch
# thread, blocked on its full queue, is shut down (no hang, no crash). d08 is the eager twin.
def main() {
    for (x, y) in fashion_mnist("test", batch=10, prefetch=2) {
        print(y[0])
        assert sum(y) < 0, "stop here"
    }
}
# EXIT: 1
# CHECK: 9
# CHECK-ERR: d07_loop_error.sp:6:9: error: assertion failed: stop here
