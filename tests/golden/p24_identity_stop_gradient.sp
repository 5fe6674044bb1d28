# identity and stop_gradient pass values through
def main() {
    print(identity([1.0, 2.0]), stop_gradient([3.0]))
}
# CHECK: [1.0, 2.0] [3.0]
