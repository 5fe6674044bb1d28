# assert: a static condition is checked at compile time, a run-time one when it runs
def main() {
    assert 1 + 1 == 2, "arithmetic"
    let x = [1.0, 2.0]
    assert sum(x) > 2.0, "sum is large enough"
    assert max(x) < 2.0, "max must stay below 2"
    print("not reached")
}
# EXIT: 1
# CHECK-ERR: error: assertion failed: max must stay below 2
