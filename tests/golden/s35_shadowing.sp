# inner blocks may shadow names with let; outer vars are updated by assignment
def main() {
    var x = 1
    let y = 10
    if true {
        let y = 20
        x = x + y
    }
    print(x, y)
}
# CHECK: 21 10
