# A program whose main takes no derivative: spora sim must say so.
let batch = 2

def main() {
    print(sum(normal(shape=(batch, 4), seed=1)))
}
