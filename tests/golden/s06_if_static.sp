# an if whose condition is known at compile time only lowers the branch taken
def pick(flag: bool, x) {
    if flag {
        return x * 2.0
    } else {
        return x - 1.0
    }
}

def main() {
    print(pick(true, [1.0, 2.0]))
    print(pick(false, [1.0, 2.0]))
}
# CHECK: [2.0, 4.0]
# CHECK-NEXT: [0.0, 1.0]
