# std.nn initialisers and the layers' default initialisation (PyTorch's): fans, gains, bounds
# and moments of the samples. Expected values in closed form:
#   xavier_uniform [200, 300]:  a = sqrt(6 / 500) = 0.10954451, variance a^2 / 3 = 0.004
#   xavier_normal  [200, 300]:  std = sqrt(2 / 500) = 0.06324555
#   kaiming_uniform [64, 3, 5, 5] (a = 0, leaky_relu): b = sqrt(2) sqrt(3 / 75) = 0.28284271
#   kaiming_normal [100, 400], fan_out, relu: std = sqrt(2) / sqrt(400) = 0.07071068
#   Dense(100, 50): +-1/sqrt(100) = 0.1;  Conv2d(4, 8, 3, groups=2): +-1/sqrt(2 * 9) = 0.23570226
#   MultiHeadAttention(8, 2): in_w xavier over [8, 24]: sqrt(6 / 32) = 0.4330127; out_w +-1/sqrt(8)
# Sample statistics get tolerances of several standard errors (n >= 4800 samples).
import std.nn

model Inits() {
    param xu: f32[200, 300] = xavier_uniform()
    param xn: f32[200, 300] = xavier_normal()
    param ku: f32[64, 3, 5, 5] = kaiming_uniform()
    param kn: f32[100, 400] = kaiming_normal(mode="fan_out", nonlinearity="relu")
    param hn: f32[400, 100] = he_normal()
    param gu: f32[30, 10] = glorot_uniform(gain=2.0)
    param c: f32[3] = constant(2.5)
}

def std_of(x) = sqrt(mean(square(x - mean(x))))
def near(a, b, rel) = abs(a - b) <= rel * abs(b)
# max |x| is at most the bound and, for thousands of samples, within 1 % of it
def bounded(x, b) = max(abs(x)) <= b and max(abs(x)) > 0.99 * b

def main() {
    print("fans", fans((5, 7)), fans((8, 3, 3, 3)), fans((4,)))
    print("gain", calculate_gain("relu"), calculate_gain("tanh"), calculate_gain("linear"), calculate_gain("selu"))
    print("gain leaky", abs(calculate_gain("leaky_relu", 0.2) - 1.3867504905630728) < 1e-12)
    let m = Inits(seed=3)
    print("xavier_uniform", bounded(m.xu, 0.10954451), near(mean(square(m.xu)), 0.004, 0.03), abs(mean(m.xu)) < 0.002)
    print("xavier_normal", near(std_of(m.xn), 0.06324555, 0.02), abs(mean(m.xn)) < 0.002)
    print("kaiming_uniform", bounded(m.ku, 0.28284271))
    print("kaiming_normal", near(std_of(m.kn), 0.07071068, 0.02), near(std_of(m.hn), 0.07071068, 0.02))
    print("glorot gain", max(abs(m.gu)) <= 2.0 * (6.0 / 40.0) ** 0.5)
    print("constant", m.c)
    # fields draw different streams; the same seed gives the same model
    print("streams", max(abs(m.kn[0:100, 0:100] - m.hn[0:100, 0:100])) > 0.0,
          max(abs(Inits(seed=3).xu - m.xu)) == 0.0, max(abs(Inits(seed=4).xu - m.xu)) > 0.0)

    let d = Dense(100, 50)
    print("dense", bounded(d.w, 0.1), max(abs(d.b)) <= 0.1, d.w.shape)
    let c = Conv2d(4, 8, 3, groups=2)
    print("conv2d", bounded(c.w, 0.23570226), max(abs(c.b)) <= 0.23570226, c.w.shape, c.b.shape)
    let a = MultiHeadAttention(8, 2)
    print("mha", max(abs(a.in_w)) <= 0.4330127, max(abs(a.in_w)) > 0.4, max(abs(a.in_b)), a.in_w.shape,
          max(abs(a.out_w)) <= 0.35355339, max(abs(a.out_b)))
    let e = Embedding(1000, 16)
    print("embedding", near(std_of(e.weight), 1.0, 0.02))
    let bn = BatchNorm2d(3)
    print("batchnorm", bn.weight, bn.bias, bn.running_mean, bn.running_var)
    let ln = LayerNorm(2)
    print("layernorm", ln.weight, ln.bias)
}
# CHECK: fans (5, 7) (27, 72) (4, 4)
# CHECK-NEXT: gain 1.4142135 1.6666666 1.0 0.75
# CHECK-NEXT: gain leaky true
# CHECK-NEXT: xavier_uniform true true true
# CHECK-NEXT: xavier_normal true true
# CHECK-NEXT: kaiming_uniform true
# CHECK-NEXT: kaiming_normal true true
# CHECK-NEXT: glorot gain true
# CHECK-NEXT: constant [2.5, 2.5, 2.5]
# CHECK-NEXT: streams true true true
# CHECK-NEXT: dense true true (100, 50)
# CHECK-NEXT: conv2d true true (8, 2, 3, 3) (8,)
# CHECK-NEXT: mha true true 0.0 (8, 24) true 0.0
# CHECK-NEXT: embedding true
# CHECK-NEXT: batchnorm [1.0, 1.0, 1.0] [0.0, 0.0, 0.0] [0.0, 0.0, 0.0] [1.0, 1.0, 1.0]
# CHECK-NEXT: layernorm [1.0, 1.0] [0.0, 0.0]
