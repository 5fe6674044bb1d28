# RUN: check
# Graph mode cannot choose a function value by a run-time condition: the error names the two
# functions (never an address) and notes point at where each is written. Eager mode, which
# knows the condition's value, runs this program.
def pick(c) {
    if c > 0.0 {
        return fn (x) => x * c
    }
    return fn (x) => x + c
}
def halve(x) = x * 0.5
def twice(x) = x * 2.0
def main() {
    let c = sum([1.0, 2.0])
    print(pick(c)(3.0))
    let f = halve if c > 1.0 else twice
    print(f(4.0))
}
# EXIT: 1
# CHECK-ERR: a19_run_time_function_choice.sp:6:5: error: this if chooses between the lambda at line 7, column 16 and the lambda at line 9, column 12 by a run-time condition, but a function value cannot depend on run-time data in graph mode
# CHECK-ERR: a19_run_time_function_choice.sp:7:16: note: the then-branch gives the lambda at line 7, column 16
# CHECK-ERR: a19_run_time_function_choice.sp:9:12: note: the else-branch gives the lambda at line 9, column 12
# CHECK-ERR: a19_run_time_function_choice.sp:16:13: error: this conditional expression chooses between the function 'halve' and the function 'twice' by a run-time condition
# CHECK-ERR: a19_run_time_function_choice.sp:11:5: note: the then-branch gives the function 'halve'
# CHECK-ERR: a19_run_time_function_choice.sp:12:5: note: the else-branch gives the function 'twice'
# CHECK-ERR: 2 errors generated
