"""The A100's measured kernel rates for `spora sim-gpt --kernel-rate` (papers/megatron_sc21/README.md,
"Kernel rates": its protocol v2), from published measurements; papers/korthikanti_mlsys23 shows
them as a sensitivity column.

    python3 papers/a100_kernel_rates.py     prints the rates and the flags
"""

PEAK_F16 = 312e12
GEMM_CEILING = 258e12 / PEAK_F16  # 8192^3 fp16 through cuBLAS, random data (H. He, 2022)
# FlashAttention (arXiv:2205.14135) appendix E.6, tables 18 and 19: Megatron-LM's attention on an
# A100-SXM4-40GB, batch 16, 8 heads of 64, sequence 2048, fp16, no dropout, no mask.
FA = {"batch": 16, "heads": 8, "d": 64, "seq": 2048, "hbm": 1555e9, "forward": 4.28e-3,
      "backward": 8.86e-3}
LAUNCH = 4e-6  # the spec's launch_overhead, per kernel


def softmax_rates():
    """The softmax's and its gradient's fraction of HBM bandwidth that FlashAttention's timing
    leaves after the attention's batched GEMMs, priced as sim/transformer/kernels.h prices them
    (memory-bound at this shape, so the GEMM ceiling does not enter)."""
    b, d, s, hbm = FA["batch"] * FA["heads"], FA["d"], FA["seq"], FA["hbm"]
    gemm_bytes = 2 * b * (s * d + d * s + s * s)
    gemm_flops = 2 * b * s * s * d
    assert gemm_flops / (PEAK_F16 * GEMM_CEILING) < gemm_bytes / hbm, "the GEMMs must be memory-bound"
    gemm = gemm_bytes / hbm + LAUNCH
    probs = b * s * s
    forward = 2 * probs * 2 / (hbm * (FA["forward"] - 2 * gemm - LAUNCH))
    backward = 3 * probs * 2 / (hbm * (FA["backward"] - 4 * gemm - LAUNCH))
    return forward, backward


SOFTMAX, SOFTMAX_GRAD = softmax_rates()
SOFTMAX_FLAGS = ["--kernel-rate", f"softmax={SOFTMAX:.4f}", "--kernel-rate",
                 f"softmax-grad={SOFTMAX_GRAD:.4f}"]
RATES = ["--kernel-rate", f"gemm_ceiling={GEMM_CEILING:.4f}"] + SOFTMAX_FLAGS


if __name__ == "__main__":
    print(f"gemm_ceiling {GEMM_CEILING:.4f}, softmax {SOFTMAX:.4f}, softmax-grad {SOFTMAX_GRAD:.4f}")
    print(" ".join(RATES))
