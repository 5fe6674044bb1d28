# @stage(k) names the pipeline stage
# expected-error@+1: @stage takes the stage number: @stage(1)
@stage
def f(x) = x + 1.0

def main() {
    print(f(ones(shape=(2,))))
}
