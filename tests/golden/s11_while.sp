# while with a data-dependent trip count
def steps_to_one(n: i32) -> i32 {
    var k = n
    var steps = 0
    while k != 1 {
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        steps = steps + 1
    }
    return steps
}

def main() {
    print(steps_to_one(6), steps_to_one(7), steps_to_one(1))
}
# CHECK: 8 16 0
