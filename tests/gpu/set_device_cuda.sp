# set_device("cuda") in a program: on a machine with an NVIDIA GPU it runs there and prints
# [3.0, 3.0]; without one, `spora run` stops with an error at the call that says why
# (tests/extra_backends.cmake: gpu_set_device_cli accepts either, nothing else).
def main() {
    set_device("cuda")
    print(ones((2,)) * 3.0)
}
