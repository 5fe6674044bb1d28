# A recursive function without a declared return type needs a branch that does not call it
# again (a base case) to give the type of its result.
def forever(x, n: i32) = x * forever(x, n - 1)

def there(x, n: i32) = back(x, n) + 1.0
def back(x, n: i32) = there(x, n - 1) * 2.0

def grow(x, n: i32) = x if n == 0 else stack((grow(x, n - 1), grow(x, n - 1)))

def main() {
    # expected-error@-8: cannot infer the result type of recursive function 'forever'
    print(forever(1.5, 3))
    # expected-error@-8: cannot infer the result type of recursive function 'there'
    print(there(1.5, 3))
    # expected-error@-7: the branches of a conditional expression have different types: f32[2] and f32[2,2]
    print(grow([1.0, 2.0], 2))
}
