"""A GPT-2-style decoder block built from kernelgen ops, checked against the same block in PyTorch.

    python3 examples/transformer.py              # GPT-2 small and the 7B layer: fp32, fp32 with tf32x3 GEMMs, bf16

In fp32 the GEMMs go where kgt.linear's float32 default puts them: the fp64 tensor cores (dmma: exact products summed
in fp64) where the cost models find them faster on the GPU (H100, H200, A100), else the CUDA cores.
    python3 examples/transformer.py tiny         # any config: a name or d_model=D,heads=H,seq=S,batch=B

The block (kernelgen/transformer.py, `kernelgen_block`), seven kernelgen launches through kernelgen.torch:

    a = kgt.layer_norm(x, ln1_g, ln1_b)
    q, k, v = split_heads(kgt.linear(a, w_qkv, b_qkv), heads)        # one GEMM, bias fused; q, k, v views
    o = kgt.attention(q, k, v, causal=True)                          # reads the views in place (layout packed),
                                                                     # O stored (batch, seq, heads, head_dim)
    h = kgt.linear(o.transpose(1, 2).reshape(b, s, d), w_o, b_o, residual=x)   # a view; acc + bias + res
    u = kgt.linear(kgt.layer_norm(h, ln2_g, ln2_b), w_up, b_up, epilogue="gelu(acc + bias)")
    y = kgt.linear(u, w_down, b_down, residual=h)                    # epilogue acc + bias + res

Each output is compared with the PyTorch block (F.layer_norm, F.linear, SDPA, tanh GELU) run in float64,
relative to what the block adds to x. A type attention does not take yet is reported, not run. On a
machine without a GPU the block is traced with fake tensors instead (shapes and the ops it launches).
`kernelgen bench transformer --size gpt2-small --dtype float32` times it against PyTorch eager and
torch.compile (`--breakdown` adds each stage's time in both blocks).
"""
import sys

from kernelgen import gpu, transformer as tf

if __name__ == "__main__":
    configs = [tf.config(c) for c in sys.argv[1:]] or [tf.config("gpt2-small"), tf.config("7b")]
    for cfg in configs:
        for dtype in ("float32", "tf32x3", "bfloat16"):
            label = f"{cfg.name:12s} d_model {cfg.d_model:5d} heads {cfg.heads:3d} seq {cfg.seq:5d} batch {cfg.batch:2d} {dtype:9s}"
            if tf.data_type(dtype) not in tf.attention_dtypes():
                print(f"{label} NOT RUN: kernelgen's attention op takes {', '.join(tf.attention_dtypes())} only "
                      f"(the {dtype} block waits for the tensor-core attention)")
                continue
            if not gpu.available():
                _, shape, ops = tf.trace(cfg, dtype)
                print(f"{label} no GPU: traced with fake tensors -> {shape}, launches {' -> '.join(ops)}")
                continue
            import torch
            torch.backends.cuda.matmul.allow_tf32 = False
            r = tf.check(cfg, dtype)
            print(f"{label} ||y - ref|| / ||ref - x||: kernelgen {r['kernelgen']:.2e}, torch {r['torch']:.2e} "
                  f"(tolerance {r['tolerance']:.0e}) {'ok' if r['ok'] else 'WRONG'}")
