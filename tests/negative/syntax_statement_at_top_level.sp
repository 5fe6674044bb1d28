# code runs from main(); the top level only declares
# expected-error@+1: expected a declaration ('def', 'model', 'let' or 'import') but found 'print'
print(1.0)
