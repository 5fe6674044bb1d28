# A tensor larger than the machine can hold (4 TB) is a located error naming its size, in both
# modes, not an abort on std::bad_alloc.
def main() {
    print(sum(normal(shape=(1000000, 1000000), seed=1)))
}
# EXIT: 1
# CHECK-ERR: d20_out_of_memory.sp:4:15: error: out of memory: a tensor buffer of 4000.00 GB could not be allocated
