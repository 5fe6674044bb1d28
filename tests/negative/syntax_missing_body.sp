# a def needs a { block } or '= expression'
# expected-error@+1: expected '{', '->' or '=' but found 'x'
def double(x) x * 2.0
