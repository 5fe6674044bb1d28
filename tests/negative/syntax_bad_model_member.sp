# a model body holds param / let fields and defs, not statements
model Lin(n: int) {
    param w: f32[n] = ones()
    # expected-error@+1: expected a model member ('param', 'let' or 'def') or '}' but found 'w'
    w = zeros()
}
