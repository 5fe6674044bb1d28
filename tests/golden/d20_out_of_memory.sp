# A tensor larger than any machine's address space (40 PB) is a located error naming its size,
# in both modes, not an abort on std::bad_alloc.
def main() {
    print(sum(normal(shape=(100000000, 100000000), seed=1)))
}
# EXIT: 1
# CHECK-ERR: d20_out_of_memory.sp:4:15: error: out of memory: a tensor buffer of 40.00 PB could not be allocated
