"""Mutation check: one-line mutations of the templates, each run through the emulator validation the
test suite makes (checker on, reverse thread order, the op's awkward test sizes); prints which are
caught and a score. Runs on the CPU (g++), no GPU:

    PYTHONPATH=. python3 bench/mutations.py            # all
    PYTHONPATH=. python3 bench/mutations.py -k reduce  # those whose name contains "reduce"

A mutation is caught when a validation fails (wrong answer, unwritten output), the emulator reports
a race, an out-of-bounds access or a fault, or the mutant no longer compiles. Exit status 1 when one
escapes, so the script can gate a change.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kernelgen import get_op  # noqa: E402
from kernelgen.errors import CompileError, LaunchError, ScheduleError, UsageError  # noqa: E402
from kernelgen.mutate import Mutation, render_mutant  # noqa: E402
from kernelgen.prepared import prepare  # noqa: E402
from kernelgen.validate import target_for, validate  # noqa: E402

M = Mutation
MMA = dict(algo="flash_mma", dtype="float16")   # the tensor-core attention (fp16 or bf16 only)
# (name, op, knobs, mutation): sizes are the op's test_problems (awkward: 1, odd, not tile multiples)
# unless the knobs carry sizes=[...]; the op's default dtype unless they carry dtype=...; a plain problem
# unless they carry problem=dict(...) (op.problem's epilogue=, batch=, stride_a=, stride_b=, residual=);
# elementwise computes its default expression unless they carry expr=...
MUTATIONS = [
    ("reduce: strided step one level too far (reads one past the end)", "reduce_sum",
     dict(strategy="strided", threads=128),
     M("reduce_sum.cu.j2", "for (int s = 1; s < {{ threads }}; s *= 2) {\n    const int index",
       "for (int s = 1; s <= {{ threads }}; s *= 2) {\n    const int index")),
    ("reduce: strided step bound < turned into <=", "reduce_sum", dict(strategy="strided", threads=128),
     M("reduce_sum.cu.j2", "if (index < {{ threads }})", "if (index <= {{ threads }})")),
    ("reduce: shared tree without its barrier", "reduce_sum", dict(strategy="sequential", threads=128),
     M("lib/reduce.j2", "{% endif %}\n  __syncthreads();\n}\n{% endmacro %}", "{% endif %}\n}\n{% endmacro %}")),
    ("reduce: warp step without __syncwarp", "reduce_sum", dict(strategy="unrolled", threads=256),
     M("reduce_sum.cu.j2", "      __syncwarp();\n      vs[tid] = t;", "      vs[tid] = t;")),
    ("softmax: all-reduce without its trailing barrier", "softmax", {},
     M("lib/reduce.j2", "  {{ warp(vals, op, warps) | indent(2) | trim }}\n  __syncthreads();\n",
       "  {{ warp(vals, op, warps) | indent(2) | trim }}\n")),
    ("softmax: all-reduce without the barrier after the per-warp words", "softmax", {},
     M("lib/reduce.j2", "{% endfor %}}\n  __syncthreads();\n", "{% endfor %}}\n")),
    ("softmax: butterfly one step short", "softmax", {},
     M("lib/reduce.j2", "for (int o = {{ width // 2 }}; o > 0; o >>= 1) {{ vals[0] }}",
       "for (int o = {{ width // 2 }}; o > 1; o >>= 1) {{ vals[0] }}")),
    # (offset o + 1 is no bug: xor masks 17, 9, 5, 3, 2 still reach all 32 lanes, each once)
    ("softmax: wrong shuffle offset", "softmax", {},
     M("lib/reduce.j2", "\"__shfl_%s_sync(KG_FULL_MASK, %s, o)\"", "\"__shfl_%s_sync(KG_FULL_MASK, %s, o / 2)\"")),
    ("layernorm: all-reduce without its trailing barrier", "layernorm", {},
     M("lib/reduce.j2", "  {{ warp(vals, op, warps) | indent(2) | trim }}\n  __syncthreads();\n",
       "  {{ warp(vals, op, warps) | indent(2) | trim }}\n")),
    ("transpose: no barrier between the tile's store and its read", "transpose", dict(vec=1),
     M("transpose.cu.j2", "tile[ty + r][tx] = x[(long long)i * N + j];\n  }\n  __syncthreads();\n",
       "tile[ty + r][tx] = x[(long long)i * N + j];\n  }\n")),
    ("transpose: store bound < turned into <=", "transpose", dict(vec=1),
     M("transpose.cu.j2", "if (jo < N && io < M) out[(long long)jo * M + io] = tile[tx][ty + r];",
       "if (jo <= N && io < M) out[(long long)jo * M + io] = tile[tx][ty + r];")),
    ("elementwise: partial-chunk bound < turned into <=", "elementwise", {},
     M("elementwise.cu.j2", "        if (idx < nvec)\n", "        if (idx <= nvec)\n")),
    ("elementwise: partial chunk one vector short", "elementwise", {},
     M("elementwise.cu.j2", "        if (idx < nvec)\n", "        if (idx < nvec - 1)\n")),
    ("gemv: element tail loop dropped", "gemv", {},
     M("gemv.cu.j2", "for (int j = nv * {{ V }} + sub; j < n; j += {{ lanes }}) acc[0]",
       "for (int j = nv * {{ V }} + sub; j < nv * {{ V }}; j += {{ lanes }}) acc[0]")),
    # the op's test sizes give every block one group of rows: the loop comes round only at 1000 rows
    ("gemv: grid-stride groups without the barrier before red is reused", "gemv",
     dict(threads=256, lanes=64, grid_stride=1, sizes=[{"M": 1000, "N": 33}]),
     M("gemv.cu.j2", "  __syncthreads();                                              // red is written again",
       "  // red is written again")),
    ("staged_load: no barrier between staging and use", "staged_load", {},
     M("staged_load.cu.j2", "{% if threads > 1 %}\n  __syncthreads();\n{% endif %}\n", "")),
    ("sgemm: cp.async waits for one group too few", "sgemm", dict(copy="cp_async", stages=3, vec_a=1),
     M("lib/gemm_mainloop.j2", "kg_cp_async_wait<{{ stages - 2 }}>();", "kg_cp_async_wait<{{ stages - 1 }}>();")),
    ("sgemm: cp.async pipeline without its barrier", "sgemm", dict(copy="cp_async", stages=3, vec_a=1),
     M("lib/gemm_mainloop.j2", "  __syncthreads();  // tile kt has landed", "  // tile kt has landed")),
    ("sgemm: register tile loop one short", "sgemm", {},
     M("lib/gemm_mainloop.j2", "for (int kk = 0; kk < {{ bk }}; ++kk) {", "for (int kk = 0; kk < {{ bk }} - 1; ++kk) {")),
    # -- templates added or rewritten since the first list: prefetch, skewed transpose, FlashAttention-2 on
    # mma.sync, the tensor-core gemm's fragments, staged C and split-K, rows' prefetched pass
    # the ring's refills are used only where a thread runs more than `distance` iterations: at 64 threads x
    # 132 blocks x float4, 5 or 6 (the op's test sizes give each thread one at most)
    ("prefetch: rolling register ring refilled one iteration short of its distance", "elementwise",
     dict(items=1, grid_stride=1, prefetch=4, prefetch_mode="rolling", threads=64, sizes=[{"M": 131, "N": 1301}]),
     M("lib/prefetch.j2", "      const long long pf_jn = pf_js + {{ D }} * {{ stride }};",
       "      const long long pf_jn = pf_js + ({{ D }} - 1) * {{ stride }};")),
    ("prefetch: shared rolling ring's cp.async wait one group short", "elementwise",
     dict(items=1, grid_stride=1, prefetch=4, prefetch_mode="rolling", prefetch_scope="shared"),
     M("lib/prefetch.j2", "kg_cp_async_wait<{{ D - 1 }}>();", "kg_cp_async_wait<{{ D }}>();")),
    ("prefetch: interleaved slots one vector too close (threads share slots)", "elementwise",
     dict(items=1, grid_stride=1, prefetch=4, prefetch_scope="shared"),
     M("lib/prefetch.j2", "pf_{{ b.name }}_slot[({{ s }}) * {{ b.step }}]",
       "pf_{{ b.name }}_slot[({{ s }}) * ({{ b.step }} - 1)]")),
    ("prefetch: batch use bound < turned into <=", "elementwise",
     dict(items=1, grid_stride=1, prefetch=4),
     M("lib/prefetch.j2", "    if (pf_js < {{ n }}) {\n      {{ caller(\"pf_js\", batch_vals.v)",
       "    if (pf_js <= {{ n }}) {\n      {{ caller(\"pf_js\", batch_vals.v)")),
    ("transpose_aligned: no barrier between the skewed tile's store and its read", "transpose",
     dict(store_align=16),
     M("transpose_aligned.cu.j2", "  }\n  __syncthreads();\n{% if V > 1 %}\n  if (full) {",
       "  }\n{% if V > 1 %}\n  if (full) {")),
    ("transpose_aligned: vector store's skew d off by one", "transpose", dict(store_align=16),
     M("transpose_aligned.cu.j2", "d = (base + (j & {{ H - 1 }}) * m_mod) & {{ H - 1 }};\n",
       "d = (base + 1 + (j & {{ H - 1 }}) * m_mod) & {{ H - 1 }};\n")),
    ("transpose_aligned: halo row of the window off by one", "transpose", dict(store_align=16),
     M("transpose_aligned.cu.j2", "const int i = i0 - {{ H }} + r, j = j0 + c;",
       "const int i = i0 - {{ H }} + r + 1, j = j0 + c;")),
    ("transpose_aligned: load_align shift added instead of subtracted", "transpose",
     dict(store_align=16, load_align=True),
     M("transpose_aligned.cu.j2", "tile[r][{{ col0 + loop.index0 }} + {{ V }} * tx - c] = v[k].{{ comp }};",
       "tile[r][{{ col0 + loop.index0 }} + {{ V }} * tx + c] = v[k].{{ comp }};")),
    # a block comes round to a second tile only where the tiles outnumber the 132 blocks (10 x 19 here)
    ("transpose_aligned: grid-stride loop without the barrier before the tile is refilled", "transpose",
     dict(store_align=16, grid_stride=1, sizes=[{"M": 301, "N": 603}]),
     M("transpose_aligned.cu.j2", "  __syncthreads();  // the tile is refilled by the next iteration\n", "")),
    # (bx shifted by one, (t / tiles_i + by + 1) % tiles_j or (t + 1) % tiles_j in row order, is no bug: it only
    # permutes which block takes which tile)
    ("tiles: grid-stride walk drops the last tile", "transpose", dict(store_align=16, grid_stride=1),
     M("lib/tiles.j2", "t < tiles_i * tiles_j; t += gridDim.x", "t < tiles_i * tiles_j - 1; t += gridDim.x")),
    ("attention_mma: online softmax misses the rescale of O", "attention", dict(MMA),
     M("lib/attention_mma.j2", "  {{ acc }}[{{ i }}][j][2 * {{ h }}] *= alpha;\n", "")),
    ("attention_mma: online softmax misses the rescale of l", "attention", dict(MMA),
     M("lib/attention_mma.j2", "{{ l }}[{{ i }}][{{ h }}] *= alpha;\n", "")),
    ("attention_mma: row max over half the quad", "attention", dict(MMA),
     M("lib/attention_mma.j2", "{{ warp([\"mt\"], \"max\", 4)", "{{ warp([\"mt\"], \"max\", 2)")),
    ("attention_mma: causal mask bound > turned into >=", "attention", dict(MMA),
     M("lib/attention_mma.j2", "(causal && key > row)", "(causal && key >= row)")),
    ("attention_mma: seq_k mask bound >= turned into >", "attention", dict(MMA),
     M("lib/attention_mma.j2", "if (key >= seq_k ||", "if (key > seq_k ||")),
    ("attention_mma: joint pipe's cp.async wait one group short", "attention", dict(MMA, stages=2),
     M("lib/attention_mma.j2", "  kg_cp_async_wait<{{ stages - 2 }}>();\n  __syncthreads();  // tile kt has landed",
       "  kg_cp_async_wait<{{ stages - 1 }}>();\n  __syncthreads();  // tile kt has landed")),
    ("attention_mma: split pipe without the barrier before P V", "attention", dict(MMA, pipe="split"),
     M("lib/attention_mma.j2", "  __syncthreads();  // V(kt) has landed", "  // V(kt) has landed")),
    ("attention_mma: staged O store row bound < turned into <=", "attention", dict(MMA, epilogue="smem"),
     M("lib/attention_mma.j2", "if (r < {{ rows }} && c < {{ cols }})", "if (r <= {{ rows }} && c < {{ cols }})")),
    ("gemm: double-buffered fragments without the barrier before a tile's last step", "gemm",
     dict(copy="cp_async", stages=3, bk=32, frag_buffers=2),
     M("gemm.cu.j2", "        __syncthreads();  // tile kt+1 has landed", "        // tile kt+1 has landed")),
    ("gemm: staged C without the barrier that frees the stages", "gemm",
     dict(copy="cp_async", stages=3, epilogue="smem"),
     M("gemm.cu.j2", "    __syncthreads();   // every warp is done reading the stages", "    // every warp is done")),
    ("splitk: slab index off by one", "gemm", dict(split_k=3),
     M("lib/splitk.j2", "{{ P }} + blockIdx.z * (", "{{ P }} + (blockIdx.z + 1) * (")),
    ("splitk: slice length not cut at K (dropped tail test)", "gemm", dict(split_k=3),
     M("lib/splitk.j2", "klen = min(kchunk, K - kbeg);", "klen = kchunk;")),
    ("splitk: reduction skips the last slice", "gemm", dict(split_k=3),
     M("lib/splitk.j2", "    for (int z = 1; z < slices; ++z) {", "    for (int z = 1; z < slices - 1; ++z) {")),
    # only M*N % 4 == 3 puts a float4 across C's end (none of the op's test sizes)
    ("splitk: vector reduction bound < turned into <=", "gemm", dict(split_k=3, sizes=[{"M": 35, "N": 17, "K": 72}]),
     M("lib/splitk.j2", "i + {{ vec - 1 }} < MN;", "i + {{ vec - 1 }} <= MN;")),
    ("rows: prefetched pass's edge vectors taken by the wrong thread", "softmax",
     dict(algo="online", items=1, prefetch=2),
     M("lib/rows.j2", "pf_c % {{ T }} == t)", "pf_c % {{ T }} == 0)")),
    # -- 2026-11-24, seventh session: a first-try round over the parts the list above covered least (sgemm's
    # edges, epilogue, batch and split-K workspace, conv2d's index math, the row ops' multi-chunk and split
    # paths, gemv's heads, transpose's edges, elementwise's bias and tail, fp32 attention, the mma.sync gemm)
    ("copy: element-wise load's column test < turned into <=", "sgemm", {},
     M("lib/copy.j2", "    if (!CHECK || c + {{ l }} < cols) x.{{ lanes[l] }} = q[{{ l }}];",
       "    if (!CHECK || c + {{ l }} <= cols) x.{{ lanes[l] }} = q[{{ l }}];")),
    ("copy: vector load's row test < turned into <=", "sgemm", {},
     M("lib/copy.j2", "if (ALIGNED && (!CHECK || (r < rows && c + {{ v - 1 }} < cols)))",
       "if (ALIGNED && (!CHECK || (r <= rows && c + {{ v - 1 }} < cols)))")),
    ("epilogue: edge block's row test >= turned into >", "sgemm", {},
     M("lib/epilogue.j2", "if (CHECK && m >= M) continue;", "if (CHECK && m > M) continue;")),
    ("epilogue: scalar store's column test < turned into <=", "sgemm", {},
     M("lib/epilogue.j2", "if (!CHECK || n + u < N) {{", "if (!CHECK || n + u <= N) {{")),
    # (a residual epilogue: since 782edf5 one without a residual runs in place before the plain store)
    ("epilogue: vector store's lanes all take the first lane's bias column", "sgemm",
     dict(problem=dict(epilogue="gelu(acc + bias) + res")),
     M("lib/epilogue.j2", "\"n + %d\" % l, \"(size_t)m * N + n + %d\" % l", "\"n + %d\" % 0, \"(size_t)m * N + n + %d\" % l")),
    ("epilogue: batched B offset by A's stride", "sgemm", dict(problem=dict(batch=3)),
     M("lib/epilogue.j2", "B += blockIdx.z * stride_b;", "B += blockIdx.z * stride_a;")),
    ("epilogue: batched residual offset by M instead of M * N", "sgemm",
     dict(problem=dict(batch=3, epilogue="relu(acc + bias) + res")),
     M("lib/epilogue.j2", "res += (size_t)blockIdx.z * M * N;", "res += (size_t)blockIdx.z * M;")),
    ("splitk: empty slice's return test <= turned into <", "sgemm", dict(split_k=3, reduce_k="workspace"),
     M("lib/splitk.j2", "if (klen <= 0) return;", "if (klen < 0) return;")),
    ("splitk: reduction's vector epilogue reads every lane's bias at the first lane's column", "sgemm",
     dict(split_k=3, reduce_k="workspace", problem=dict(epilogue="acc + bias")),
     M("lib/splitk.j2", "\"(int)((i + %d) %% N)\" % loop.index0", "\"(int)((i + %d) %% N)\" % 0")),
    ("sgemm: one-stage loop without the barrier before the tile is overwritten", "sgemm", dict(stages=1),
     M("lib/gemm_mainloop.j2", "  {{ compute(\"0\") | indent(2) | trim }}\n  __syncthreads();\n",
       "  {{ compute(\"0\") | indent(2) | trim }}\n")),
    ("swizzle: the last group's rows not cut at the grid's edge", "sgemm", {},
     M("lib/swizzle.j2", "const int rows = ({{ tiles_y }}) - first_row < {{ swizzle }} ? ({{ tiles_y }}) - first_row : {{ swizzle }};",
       "const int rows = {{ swizzle }};")),
    ("conv2d direct: padding row test >= H turned into > H", "conv2d", dict(algo="direct"),
     M("conv2d_direct.cu.j2", "if (h < 0 || h >= H) continue;", "if (h < 0 || h > H) continue;")),
    ("conv2d direct: column taps dilated by dil_h", "conv2d", dict(algo="direct"),
     M("conv2d_direct.cu.j2", "const int ww = w0 + s * dil_w;", "const int ww = w0 + s * dil_h;")),
    ("conv2d implicit: pixel column strided by stride_h", "conv2d", {},
     M("conv2d_gemm.cu.j2", "pix_w[j] = q * stride_w - pad_w;", "pix_w[j] = q * stride_h - pad_w;")),
    ("conv2d implicit: filter tap's row offset dilated by dil_w", "conv2d", {},
     M("conv2d_gemm.cu.j2", "const int rd = r * dil_h, sd = s * dil_w;", "const int rd = r * dil_w, sd = s * dil_w;")),
    ("conv2d im2col: right padding test < W turned into <= W", "conv2d", dict(algo="im2col"),
     M("conv2d_gemm.cu.j2", "(unsigned)ww < (unsigned)W) ? __ldg(xn", "(unsigned)ww <= (unsigned)W) ? __ldg(xn")),
    ("conv2d gemm: filter row test < K turned into <= K", "conv2d", {},
     M("conv2d_gemm.cu.j2", "const bool row_ok = kch < K", "const bool row_ok = kch <= K")),
    ("conv2d gemm: float4 filter load's crs test < turned into <=", "conv2d", {},
     M("conv2d_gemm.cu.j2", "if (row_ok && crs < CRS) {", "if (row_ok && crs <= CRS) {")),
    ("conv2d gemm: float4 output path taken where P*Q is only even", "conv2d", {},
     M("conv2d_gemm.cu.j2", "const bool y_vec = ((P * Q) & 3) == 0;", "const bool y_vec = ((P * Q) & 1) == 0;")),
    ("conv2d split-K: a slice's partial last tile dropped", "conv2d", dict(split_k=2),
     M("conv2d_gemm.cu.j2", "const int ktiles = (klen + {{ bk }} - 1) / {{ bk }};", "const int ktiles = klen / {{ bk }};")),
    ("layernorm: registers' past-the-end test < turned into <= (adds mean^2)", "layernorm", {},
     M("layernorm.cu.j2", "const bool ok = i * {{ T }} + t < nv;    // columns past the end must not add mean^2",
       "const bool ok = i * {{ T }} + t <= nv;    // columns past the end must not add mean^2")),
    ("layernorm split: the write kernel's merge skips the last chunk", "layernorm", dict(algo="split"),
     M("layernorm.cu.j2", "  for (int k = t; k < chunks; k += {{ T }}) {", "  for (int k = t; k < chunks - 1; k += {{ T }}) {")),
    ("layernorm split: any twin's chunk counts taken without the row's offset", "layernorm", dict(algo="split"),
     M("layernorm.cu.j2", "{% set elems = \"max(0, min(cols, %s * %d - off + %d) - max(0, %s * %d - off))\" %}",
       "{% set elems = \"max(0, min(cols, %s * %d + %d) - max(0, %s * %d))\" %}")),
    ("rows: any twin's edge lanes add the residual one element on", "layernorm", dict(problem=dict(residual="add")),
     M("lib/rows.j2", "        v[i][l] += {{ io.to_float | format(add ~ \"r[e]\") }};",
       "        v[i][l] += {{ io.to_float | format(add ~ \"r[e + 1]\") }};")),
    ("softmax online: a new max does not rescale the running sum", "softmax", dict(algo="online"),
     M("softmax.cu.j2", "s = s * __expf(m - mc) + acc;", "s = s + acc;")),
    ("softmax split: the write kernel's merge starts at the second chunk", "softmax", dict(algo="split"),
     M("softmax_split.cu.j2", "for (int k = threadIdx.x; k < chunks; k += {{ threads }})",
       "for (int k = threadIdx.x + 1; k < chunks; k += {{ threads }})")),
    ("softmax three_pass: the last pass leaves the row's last vector undivided", "softmax", dict(algo="three_pass"),
     M("softmax.cu.j2", "        if (c < nv) {\n{% if W == 4 %}", "        if (c < nv - 1) {\n{% if W == 4 %}")),
    ("rows: any twin's edge store bound < turned into <=", "softmax", {},
     M("lib/rows.j2", "        if ((unsigned)e < (unsigned){{ n }}) yr[e] = {{ io.from_float | format(expr) }};",
       "        if ((unsigned)e <= (unsigned){{ n }}) yr[e] = {{ io.from_float | format(expr) }};")),
    ("gemv: unaligned row's scalar head not cut at N", "gemv", {},
     M("gemv.cu.j2", "const int head = min((int)((-(long long)row * N) & {{ V - 1 }}), N);",
       "const int head = (int)((-(long long)row * N) & {{ V - 1 }});")),
    ("gemv: unrolled loop's bound < turned into <=", "gemv", {},
     M("gemv.cu.j2", "for (; v + {{ (unroll - 1) * lanes }} < nv; v += {{ unroll * lanes }}) {",
       "for (; v + {{ (unroll - 1) * lanes }} <= nv; v += {{ unroll * lanes }}) {")),
    ("reduce: block sum's first warp reads one word past the row's warps", "gemv", dict(threads=256, lanes=64),
     M("lib/reduce.j2", "\"%s < %d ? %s[%s%s] : 0.0f\" % (lane, warps, buf, base, lane)",
       "\"%s <= %d ? %s[%s%s] : 0.0f\" % (lane, warps, buf, base, lane)")),
    ("transpose: vector load path taken by edge tiles too", "transpose", {},
     M("transpose.cu.j2", "  if (full && N % {{ V }} == 0) {", "  if (N % {{ V }} == 0) {")),
    ("transpose: guarded flat load's column test < turned into <=", "transpose", {},
     M("transpose.cu.j2", "{{ \"if (i0 + fr + r < M && j0 + fc + c < N) \" if guard }}",
       "{{ \"if (i0 + fr + r < M && j0 + fc + c <= N) \" if guard }}")),
    ("transpose naive: row test < M turned into <= M", "transpose", dict(staged=False, vec=1),
     M("transpose.cu.j2", "if (i < M && j < N) out[(long long)j * M + i] = x[(long long)i * N + j];",
       "if (i <= M && j < N) out[(long long)j * M + i] = x[(long long)i * N + j];")),
    ("tiles: diagonal walk's column not wrapped at the tile columns", "transpose", dict(order="diagonal"),
     M("lib/tiles.j2", "const int bx = (t / tiles_i + by) % tiles_j;", "const int bx = t / tiles_i + by;")),
    ("elementwise: a vector's bias column wraps one cols too few", "elementwise", dict(expr="relu(bias) * a"),
     M("elementwise.cu.j2", "c{{ ci }}_ - cols < cols ? c{{ ci }}_ - cols : c{{ ci }}_ % cols;",
       "c{{ ci }}_ - cols <= cols ? c{{ ci }}_ - cols : c{{ ci }}_ % cols;")),
    ("elementwise: scalar tail's bias column taken as the row", "elementwise", dict(expr="relu(bias) * a"),
     M("elementwise.cu.j2", "(\"p_\" ~ b ~ \"[e % cols]\")", "(\"p_\" ~ b ~ \"[e / cols]\")")),
    ("elementwise: a chunk one vector short taken as full", "elementwise", {},
     M("elementwise.cu.j2", "    if (base + {{ chunk }} <= nvec) {", "    if (base + {{ chunk }} <= nvec + 1) {")),
    ("elementwise: scalar tail bound < turned into <=", "elementwise", {},
     M("elementwise.cu.j2", "if (blockIdx.x == 0 && tid < n - nvec * {{ V }}) {",
       "if (blockIdx.x == 0 && tid <= n - nvec * {{ V }}) {")),
    ("attention flash: the diagonal tile left unmasked", "attention", {},
     M("lib/attention.j2", "(causal && {{ k0 }} + {{ bk - 1 }} > {{ q0 }})", "(causal && {{ k0 }} > {{ q0 }})")),
    ("attention flash: O row test >= seq_q turned into >", "attention", {},
     M("lib/attention.j2", "if (row >= seq_q) continue;", "if (row > seq_q) continue;")),
    ("attention flash: seq_k mask bound >= turned into >", "attention", {},
     M("lib/attention.j2", "if (edge && (key >= seq_k ||", "if (edge && (key > seq_k ||")),
    ("attention unfused: the causal mask takes the diagonal", "attention", dict(algo="unfused"),
     M("attention_unfused.cu.j2", "causal && j > i ? KG_NEG_INF", "causal && j >= i ? KG_NEG_INF")),
    ("attention unfused: P V's tile loop without its trailing barrier", "attention", dict(algo="unfused"),
     M("attention_unfused.cu.j2", "acc = fmaf(ps[ty][j], vs[j][tx], acc);\n    __syncthreads();\n",
       "acc = fmaf(ps[ty][j], vs[j][tx], acc);\n")),
    ("attention unfused: softmax's row guard >= turned into >", "attention", dict(algo="unfused"),
     M("attention_unfused.cu.j2", "if (row >= rows) return;", "if (row > rows) return;")),
    ("tc_copy: element-wise load's odd-column test < turned into <=", "gemm", {},
     M("lib/tc_copy.j2", "row_ok && c + 2 * u + 1 < cols)) ? p[2 * u + 1] : 0u;", "row_ok && c + 2 * u + 1 <= cols)) ? p[2 * u + 1] : 0u;")),
    ("tc_epilogue: element-wise store's odd-column test < turned into <=", "gemm", {},
     M("lib/tc_epilogue.j2", "if (!CHECK || n + 1 < {{ N }}) crow[n + 1]", "if (!CHECK || n + 1 <= {{ N }}) crow[n + 1]")),
    ("gemm: register double buffer stores the next tile into the stage being read", "gemm", dict(copy="sync", stages=2),
     M("gemm.cu.j2", "{{ copy_tile(\"put\", \"(kt + 1) & 1\", \"k1\") | indent(6) | trim }}",
       "{{ copy_tile(\"put\", \"kt & 1\", \"k1\") | indent(6) | trim }}")),
    # written after 782edf5 (the in-place epilogue, the new ew_funcs.j2), run once the sizes above were added
    ("epilogue: in-place epilogue reads a run's first column's bias for the whole run", "sgemm",
     dict(problem=dict(epilogue="gelu(acc + bias)")),
     M("lib/epilogue.j2", "const int n = min(n0 + tn0 + rj * {{ run_stride_n }} + qj, N - 1);",
       "const int n = min(n0 + tn0 + rj * {{ run_stride_n }}, N - 1);")),
    ("ew_funcs: gelu's cubic coefficient mistyped", "elementwise", dict(expr="gelu(x + bias) * 2.0"),
     M("lib/ew_funcs.j2", "-1.5957691216057308f * (x + 0.044715f * x * x * x)", "-1.5957691216057308f * (x + 0.04715f * x * x * x)")),
    ("ew_funcs: silu's exponent without its sign", "elementwise", dict(expr="silu(-a) / 3 + exp(tanh(b)) * abs(a)"),
     M("lib/ew_funcs.j2", "return __fdividef(x, 1.0f + __expf(-x));", "return __fdividef(x, 1.0f + __expf(x));")),
    ("ew_funcs: 16-bit gelu adds x instead of x / 2", "elementwise", dict(expr="gelu(a)", dtype="float16"),
     M("lib/ew_funcs.j2", "return fmaf(h, t, h);", "return fmaf(h, t, x);")),
]


def verdict(opname: str, knobs: dict, mutation: Mutation, sizes: list[dict]) -> str:
    """How the mutation is caught ('' when it escapes)."""
    op = get_op(opname)
    knobs = dict(knobs)
    sizes = knobs.pop("sizes", sizes)
    dtype = knobs.pop("dtype", None)
    fused = knobs.pop("problem", {})     # what the problem adds: epilogue=, batch=, stride_a=, residual=, ...
    if "expr" in knobs:                  # elementwise: the op instance of that expression
        op = op.with_expr(knobs["expr"])
    sched = op.schedule(**knobs)
    for s in sizes:
        p = op.problem(s, dtype=dtype, **fused)
        try:
            prep = prepare(op, sched, p, target_for("emulate", None))
        except (ScheduleError, UsageError):
            continue     # a size the schedule refuses by name (a register row longer than its registers hold)
        try:
            mutant = render_mutant(prep.kernel, mutation)
            v = validate(op, sched, p, backend="emulate", check=True, order="reverse", seed=1,
                         mutate=lambda _: mutant)
        except CompileError as e:
            return f"does not compile ({str(e).splitlines()[0][:80]})"
        except LaunchError as e:
            kind = getattr(e, "kind", "") or "error"
            return f"{kind} at {s}"
        if not v.ok:
            return f"wrong answer at {s}"
    return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", default="", help="run the mutations whose name contains this")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if args.k in m[0]]
    caught = 0
    for name, opname, knobs, mutation in chosen:
        t0 = time.perf_counter()
        sizes = list(get_op(opname).test_problems())
        how = verdict(opname, knobs, mutation, sizes)
        caught += bool(how)
        print(f"{'caught ' if how else 'ESCAPED'}  {name}: {how or 'every validation passed'} "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
    print(f"score: {caught}/{len(chosen)} mutations caught ({100 * caught / max(1, len(chosen)):.0f}%)")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
