# RUN: check
# A recursive function with neither a declared return type nor a base case: the error points
# at the function and says to write the return type, and a note points at the recursive call.
def forever(x, n: i32) = x * forever(x, n - 1)

def main() {
    print(forever(1.5, 3))
}
# EXIT: 1
# CHECK-ERR: a18_recursion_no_base_case.sp:4:5: error: cannot infer the result type of recursive function 'forever': every path through it calls it again, so no branch (a base case) gives the type; write the return type (-> ...)
# CHECK-ERR: def forever(x, n: i32) = x * forever(x, n - 1)
# CHECK-ERR: ^~~~~~~
# CHECK-ERR: a18_recursion_no_base_case.sp:4:30: note: 'forever' calls itself here
# CHECK-ERR: ^~~~~~~~~~~~~~~~~
