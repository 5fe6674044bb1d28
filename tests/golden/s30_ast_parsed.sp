# the parsed AST
# RUN: ir --stage parsed
def f(x: f32[N], k = 2) = x * k + 1.0

def main() {
    print(f([1.0]))
}
# CHECK: f
# CHECK: x
# CHECK: main
