# structured control flow in the IR: while, for_range, if with nested body graphs
# RUN: ir --stage typed
def count(n: i32) -> i32 {
    var k = 0
    while k < n {
        k = k + 1
    }
    var s = 0
    for i in range(n) {
        s = s + i
    }
    return k + s if n > 0 else 0
}

def main() {
    print(count(4))
}
# CHECK: graph @count(%n: i32) -> i32 {
# CHECK: while(@
# CHECK: for_range(
# CHECK: if(
