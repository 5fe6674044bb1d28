# `spora ir --entry` names a graph the program does not have: the error lists the graphs.
# RUN: ir --stage optimized --entry stpe
def step(x) = x * 2.0

def main() {
    print(step(1.0))
}
# EXIT: 2
# CHECK-ERR: spora: error: --entry: no graph @stpe in
# CHECK-ERR: spora: note: its graphs: @main
