# recursion on run-time values becomes a graph calling itself
def fact(n: i32) -> i32 {
    if n <= 1 {
        return 1
    }
    return n * fact(n - 1)
}

def fib(n: i32) -> i32 = n if n < 2 else fib(n - 1) + fib(n - 2)

def main() {
    print(fact(10))
    print(fib(15))
}
# CHECK: 3628800
# CHECK-NEXT: 610
