# set_device and set_mode as the first statements of main, in either order (MindSpore's
# set_context(device_target=..., mode=...)): they choose where and how the rest runs before
# anything does. On the CPU the program prints what it would print without them. (The driver
# runs every golden file with --mode eager as well: set_mode in the program takes precedence.)
def main() {
    set_mode("graph")
    set_device("cpu")
    let x = [1.0, 2.0, 3.0]
    print(x * 2.0, sum(x))
    print(grad(fn (v) => sum(v * v))(x))
}
# CHECK: [2.0, 4.0, 6.0] 6.0
# CHECK-NEXT: [2.0, 4.0, 6.0]
