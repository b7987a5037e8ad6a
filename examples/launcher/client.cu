// A plain C++ client of six kernelgen kernels, through their host launchers only: no Python, no
// knowledge of grids or workspaces beyond what each file's kg_workspace_bytes_* says. Build with the
// Makefile beside it (nvcc only); run on a GPU to check results at awkward sizes against a CPU
// reference. Without a GPU it still checks that bad input is refused with cudaErrorInvalidValue.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <cuda_runtime.h>

#define KG_STR(x) #x
#define KG_XSTR(x) KG_STR(x)
#define KG_CAT(a, b) a##b
#define KG_XCAT(a, b) KG_CAT(a, b)
#define LAUNCH(k) KG_XCAT(kg_launch_, k)
#define WORKSPACE(k) KG_XCAT(kg_workspace_bytes_, k)
#include KG_XSTR(KG_SGEMM.h)
#include KG_XSTR(KG_SPLITK.h)
#include KG_XSTR(KG_REDUCE.h)
#include KG_XSTR(KG_SOFTMAX.h)
#include KG_XSTR(KG_CONV2D.h)
#include KG_XSTR(KG_CONV2D_SPLIT.h)
#ifdef KG_WGMMA      // make ARCH=sm_90a: the wgmma+TMA fp16 GEMM, whose launcher encodes its TMA descriptors
#include <cuda_fp16.h>
#include KG_XSTR(KG_WGMMA.h)
#endif

static int failures = 0;
static void expect(bool ok, const char* what) {
  if (!ok) { std::printf("FAIL: %s\n", what); ++failures; }
}
#define REFUSED(call) expect((call) == cudaErrorInvalidValue, #call " is refused")

// Fake device addresses: the launchers refuse bad input before touching memory or the device.
static float* fake(uintptr_t offset = 0) { return reinterpret_cast<float*>(uintptr_t(1) << 20 | offset); }

static void bad_input() {
  float *A = fake(), *B = fake(), *C = fake();
  REFUSED(LAUNCH(KG_SGEMM)(nullptr, B, C, 8, 8, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_SGEMM)(A, B, nullptr, 8, 8, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_SGEMM)(A, B, C, 0, 8, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_SGEMM)(A, B, C, 8, -1, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_SGEMM)(fake(4), B, C, 8, 8, 8, nullptr, 0, 0));      // 16-byte vectors of A
  REFUSED(LAUNCH(KG_SPLITK)(A, B, fake(8), 8, 8, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_REDUCE)(nullptr, C, 1000, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_REDUCE)(A, C, 0, nullptr, 0, 0));
  size_t ws = WORKSPACE(KG_SOFTMAX)(37, 100000);
  expect(ws > 0, "softmax's split form needs a workspace");
  REFUSED(LAUNCH(KG_SOFTMAX)(A, C, 37, 100000, nullptr, ws, 0));
  REFUSED(LAUNCH(KG_SOFTMAX)(A, C, 37, 100000, fake(), ws - 1, 0));
  REFUSED(LAUNCH(KG_SOFTMAX)(A, C, 37, 100000, fake(4), ws, 0));            // the workspace's own alignment
  // conv2d's sizes: N, C, H, W, K, R, S, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w
  REFUSED(LAUNCH(KG_CONV2D)(A, B, C, 1, 3, 11, 13, 5, 3, 3, 1, 1, 0, -1, 1, 1, nullptr, 0, 0));   // pad_w < 0
  REFUSED(LAUNCH(KG_CONV2D)(A, B, C, 1, 3, 11, 13, 5, 3, 3, 1, 0, 0, 0, 1, 1, nullptr, 0, 0));    // stride_w < 1
  REFUSED(LAUNCH(KG_CONV2D)(A, B, C, 1, 3, 11, 13, 5, 3, 3, 1, 1, 0, 0, 1, 0, nullptr, 0, 0));    // dil_w < 1
  REFUSED(LAUNCH(KG_CONV2D)(A, B, C, 1, 3, 1, 13, 5, 3, 3, 1, 1, 0, 0, 1, 1, nullptr, 0, 0));     // empty output
  REFUSED(LAUNCH(KG_CONV2D)(A, B, C, 1, 3, 11, 13, 5, 3, 3, 1, 1, 0, 0, 6, 1, nullptr, 0, 0));    // dilated: empty
#ifdef KG_WGMMA
  const __half *HA = reinterpret_cast<const __half*>(fake()), *HB = HA;
  __half* HC = reinterpret_cast<__half*>(fake());
  REFUSED(LAUNCH(KG_WGMMA)(nullptr, HB, HC, 8, 8, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_WGMMA)(HA, HB, HC, 0, 8, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_WGMMA)(HA, HB, HC, 8, 8, 12, nullptr, 0, 0));     // A's rows of 24 bytes: TMA takes 16k
  REFUSED(LAUNCH(KG_WGMMA)(HA, HB, HC, 8, 1, 8, nullptr, 0, 0));      // B's rows of 2 bytes
  REFUSED(LAUNCH(KG_WGMMA)(reinterpret_cast<const __half*>(fake(8)), HB, HC, 8, 8, 8, nullptr, 0, 0));
  REFUSED(LAUNCH(KG_WGMMA)(HA, HB, reinterpret_cast<__half*>(fake(2)), 8, 8, 8, nullptr, 0, 0));
#endif
}

// -- on a GPU -------------------------------------------------------------------------------------
static std::vector<float> randoms(size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (auto& x : v) { seed = seed * 1664525u + 1013904223u; x = float(int(seed >> 24) % 17 - 8) / 8.0f; }
  return v;
}
static float* device(const std::vector<float>& h) {
  float* d = nullptr;
  cudaMalloc(&d, h.size() * sizeof(float) + 16);
  cudaMemcpy(d, h.data(), h.size() * sizeof(float), cudaMemcpyHostToDevice);
  return d;
}
static std::vector<float> host(const float* d, size_t n) {
  std::vector<float> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
  return h;
}
static void* workspace(size_t bytes) {
  void* p = nullptr;
  if (bytes) cudaMalloc(&p, bytes);
  return p;
}
static double max_err(const std::vector<float>& out, const std::vector<double>& ref) {
  double e = 0;
  for (size_t i = 0; i < ref.size(); ++i) e = std::fmax(e, std::fabs(out[i] - ref[i]) / (1.0 + std::fabs(ref[i])));
  return std::isfinite(e) ? e : INFINITY;
}

typedef cudaError_t (*GemmLaunch)(const float*, const float*, float*, int, int, int, void*, size_t, cudaStream_t);
typedef size_t (*GemmWorkspace)(int, int, int);

static void gemm(const char* name, GemmLaunch launch, GemmWorkspace wsb, int M, int N, int K) {
  auto a = randoms(size_t(M) * K, 1), b = randoms(size_t(K) * N, 2);
  std::vector<double> ref(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) ref[size_t(i) * N + j] += double(a[size_t(i) * K + k]) * b[size_t(k) * N + j];
  float *A = device(a), *B = device(b), *C = device(std::vector<float>(size_t(M) * N, NAN));
  size_t bytes = wsb(M, N, K);
  void* ws = workspace(bytes);
  cudaError_t e = launch(A, B, C, M, N, K, ws, bytes, 0);
  double err = max_err(host(C, ref.size()), ref);
  std::printf("%-8s M=%d N=%d K=%d: %s, max error %.2g\n", name, M, N, K, cudaGetErrorString(e), err);
  expect(e == cudaSuccess && err < 1e-4, name);
  cudaFree(A); cudaFree(B); cudaFree(C); cudaFree(ws);
}

#ifdef KG_WGMMA
// C = A @ B in fp16 with fp32 sums: inputs are small integers, so the sums are exact and each output
// must be the correctly rounded exact product (within half an fp16 ulp: u = 2^-11 relative).
static void wgmma_gemm(int M, int N, int K) {
  auto ints = [](size_t n, unsigned seed) {
    std::vector<float> v(n);
    for (auto& x : v) { seed = seed * 1664525u + 1013904223u; x = float(int(seed >> 24) % 7 - 3); }
    return v;
  };
  auto a = ints(size_t(M) * K, 7), b = ints(size_t(K) * N, 8);
  std::vector<double> ref(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) ref[size_t(i) * N + j] += double(a[size_t(i) * K + k]) * b[size_t(k) * N + j];
  auto to_half = [](const std::vector<float>& v) {
    std::vector<__half> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = __float2half(v[i]);
    return h;
  };
  auto ha = to_half(a), hb = to_half(b), hc = to_half(std::vector<float>(ref.size(), NAN));
  __half *A = nullptr, *B = nullptr, *C = nullptr;
  cudaMalloc(&A, ha.size() * 2); cudaMalloc(&B, hb.size() * 2); cudaMalloc(&C, hc.size() * 2);
  cudaMemcpy(A, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(B, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(C, hc.data(), hc.size() * 2, cudaMemcpyHostToDevice);
  cudaError_t e = LAUNCH(KG_WGMMA)(A, B, C, M, N, K, nullptr, WORKSPACE(KG_WGMMA)(M, N, K), 0);
  cudaMemcpy(hc.data(), C, hc.size() * 2, cudaMemcpyDeviceToHost);
  double err = 0;     // in units of u |ref|; any error where ref is 0 is infinite
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = std::fabs(double(__half2float(hc[i])) - ref[i]);
    if (d != 0) err = std::fmax(err, std::isfinite(d) && ref[i] != 0 ? d / (std::ldexp(1.0, -11) * std::fabs(ref[i])) : INFINITY);
  }
  std::printf("wgmma    M=%d N=%d K=%d: %s, max error %.2g u\n", M, N, K, cudaGetErrorString(e), err);
  expect(e == cudaSuccess && err <= 1.0, "wgmma");
  cudaFree(A); cudaFree(B); cudaFree(C);
}
#endif

static void reduce(long n) {
  auto x = randoms(n, 3);
  double ref = 0;
  for (float v : x) ref += v;
  float *X = device(x), *out = device(std::vector<float>(1, NAN));
  size_t bytes = WORKSPACE(KG_REDUCE)(int(n));
  void* ws = workspace(bytes);
  cudaError_t e = LAUNCH(KG_REDUCE)(X, out, int(n), ws, bytes, 0);
  double err = max_err(host(out, 1), std::vector<double>(1, ref));
  std::printf("reduce   n=%ld: %s, error %.2g\n", n, cudaGetErrorString(e), err);
  expect(e == cudaSuccess && err < 1e-5, "reduce");
  cudaFree(X); cudaFree(out); cudaFree(ws);
}

static void softmax(int rows, int cols) {
  auto x = randoms(size_t(rows) * cols, 4);
  std::vector<double> ref(x.size());
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) m = std::fmax(m, x[size_t(r) * cols + c]);
    for (int c = 0; c < cols; ++c) s += std::exp(x[size_t(r) * cols + c] - m);
    for (int c = 0; c < cols; ++c) ref[size_t(r) * cols + c] = std::exp(x[size_t(r) * cols + c] - m) / s;
  }
  float *X = device(x), *Y = device(std::vector<float>(x.size(), NAN));
  size_t bytes = WORKSPACE(KG_SOFTMAX)(rows, cols);
  void* ws = workspace(bytes);
  cudaError_t e = LAUNCH(KG_SOFTMAX)(X, Y, rows, cols, ws, bytes, 0);
  double err = max_err(host(Y, ref.size()), ref);
  std::printf("softmax  rows=%d cols=%d: %s, max error %.2g\n", rows, cols, cudaGetErrorString(e), err);
  expect(e == cudaSuccess && err < 1e-5, "softmax");
  cudaFree(X); cudaFree(Y); cudaFree(ws);
}

typedef cudaError_t (*ConvLaunch)(const float*, const float*, float*, int, int, int, int, int, int, int, int, int, int,
                                  int, int, int, void*, size_t, cudaStream_t);
typedef size_t (*ConvWorkspace)(int, int, int, int, int, int, int, int, int, int, int, int, int);

static void conv2d(const char* name, ConvLaunch launch, ConvWorkspace wsb, int N, int C, int H, int W, int K, int R,
                   int S, int sh, int sw, int ph, int pw, int dh, int dw) {
  const int P = (H + 2 * ph - dh * (R - 1) - 1) / sh + 1, Q = (W + 2 * pw - dw * (S - 1) - 1) / sw + 1;
  auto x = randoms(size_t(N) * C * H * W, 5), w = randoms(size_t(K) * C * R * S, 6);
  std::vector<double> ref(size_t(N) * K * P * Q, 0.0);
  for (int n = 0; n < N; ++n) for (int k = 0; k < K; ++k) for (int p = 0; p < P; ++p) for (int q = 0; q < Q; ++q) {
    double acc = 0;
    for (int c = 0; c < C; ++c) for (int r = 0; r < R; ++r) for (int s = 0; s < S; ++s) {
      int h = p * sh - ph + r * dh, ww = q * sw - pw + s * dw;
      if (h >= 0 && h < H && ww >= 0 && ww < W)
        acc += double(x[((size_t(n) * C + c) * H + h) * W + ww]) * w[((size_t(k) * C + c) * R + r) * S + s];
    }
    ref[((size_t(n) * K + k) * P + p) * Q + q] = acc;
  }
  float *X = device(x), *Wt = device(w), *Y = device(std::vector<float>(ref.size(), NAN));
  size_t bytes = wsb(N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw);
  void* ws = workspace(bytes);
  cudaError_t e = launch(X, Wt, Y, N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, ws, bytes, 0);
  double err = max_err(host(Y, ref.size()), ref);
  std::printf("%-8s N=%d C=%d H=%d W=%d K=%d R=%d S=%d stride %dx%d pad %dx%d dilation %dx%d: %s, max error %.2g\n",
              name, N, C, H, W, K, R, S, sh, sw, ph, pw, dh, dw, cudaGetErrorString(e), err);
  expect(e == cudaSuccess && err < 1e-4, name);
  cudaFree(X); cudaFree(Wt); cudaFree(Y); cudaFree(ws);
}

// -- timing (`./client --time`): each launcher at its op's benchmark size, timed as `kernelgen bench --timing
// events` times: one launch between CUDA events, L2 flushed before each, the median of 30 after 5 warm-ups.
static float median_us(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return 1e3f * v[v.size() / 2];
}
template <class F> static float time_launch(F launch) {
  int l2 = 0;
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
  void* scrub = workspace(size_t(l2) * 2);
  cudaEvent_t start, stop;
  cudaEventCreate(&start); cudaEventCreate(&stop);
  std::vector<float> ms;
  for (int rep = 0; rep < 35; ++rep) {
    cudaMemsetAsync(scrub, rep & 0xff, size_t(l2) * 2, 0);
    cudaEventRecord(start, 0);
    expect(launch() == cudaSuccess, "a timed launch");
    cudaEventRecord(stop, 0);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (rep >= 5) ms.push_back(t);
  }
  cudaEventDestroy(start); cudaEventDestroy(stop); cudaFree(scrub);
  return median_us(ms);
}
#define REPORT(kernel, size, us) std::printf("time %s %s %.1f us\n", KG_XSTR(kernel), size, us)

static void time_all() {
  const int n = 4096;
  auto a = randoms(size_t(n) * n, 1), b = randoms(size_t(n) * n, 2);
  float *A = device(a), *B = device(b), *C = device(std::vector<float>(size_t(n) * n, 0.f));
  size_t bytes = WORKSPACE(KG_SGEMM)(n, n, n);
  void* ws = workspace(bytes);
  REPORT(KG_SGEMM, "M=4096,N=4096,K=4096", time_launch([&] { return LAUNCH(KG_SGEMM)(A, B, C, n, n, n, ws, bytes, 0); }));
  cudaFree(ws);
  bytes = WORKSPACE(KG_SPLITK)(n, n, n);
  ws = workspace(bytes);
  REPORT(KG_SPLITK, "M=4096,N=4096,K=4096", time_launch([&] { return LAUNCH(KG_SPLITK)(A, B, C, n, n, n, ws, bytes, 0); }));
  cudaFree(ws); cudaFree(A); cudaFree(B); cudaFree(C);

  const int len = 268435456;
  float *X = device(randoms(len, 3)), *out = device(std::vector<float>(1, 0.f));
  bytes = WORKSPACE(KG_REDUCE)(len);
  ws = workspace(bytes);
  REPORT(KG_REDUCE, "n=268435456", time_launch([&] { return LAUNCH(KG_REDUCE)(X, out, len, ws, bytes, 0); }));
  cudaFree(ws); cudaFree(out); cudaFree(X);

  const int rows = 1024, cols = 32768;
  X = device(randoms(size_t(rows) * cols, 4));
  float* Y = device(std::vector<float>(size_t(rows) * cols, 0.f));
  bytes = WORKSPACE(KG_SOFTMAX)(rows, cols);
  ws = workspace(bytes);
  REPORT(KG_SOFTMAX, "rows=1024,cols=32768", time_launch([&] { return LAUNCH(KG_SOFTMAX)(X, Y, rows, cols, ws, bytes, 0); }));
  cudaFree(ws); cudaFree(X); cudaFree(Y);

  const int N = 32, Ch = 64, H = 128, W = 128, K = 128, R = 3, S = 3;   // stride 1, pad 1: P = H, Q = W
  X = device(randoms(size_t(N) * Ch * H * W, 5));
  float* Wt = device(randoms(size_t(K) * Ch * R * S, 6));
  Y = device(std::vector<float>(size_t(N) * K * H * W, 0.f));
  bytes = WORKSPACE(KG_CONV2D)(N, Ch, H, W, K, R, S, 1, 1, 1, 1, 1, 1);
  ws = workspace(bytes);
  REPORT(KG_CONV2D, "N=32,C=64,H=128,W=128,K=128,R=3,S=3,stride=1,pad=1",
         time_launch([&] { return LAUNCH(KG_CONV2D)(X, Wt, Y, N, Ch, H, W, K, R, S, 1, 1, 1, 1, 1, 1, ws, bytes, 0); }));
  cudaFree(ws); cudaFree(X); cudaFree(Wt); cudaFree(Y);
}

int main(int argc, char** argv) {
  const bool timing = argc > 1 && std::string(argv[1]) == "--time";
  bad_input();
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("no GPU: checked bad input only (%d failures)\n", failures);
    return failures ? 1 : 0;
  }
  const int sizes[] = {1, 127, 1000};
  for (int M : sizes) for (int N : sizes) for (int K : sizes) {
    gemm("sgemm", LAUNCH(KG_SGEMM), WORKSPACE(KG_SGEMM), M, N, K);
    gemm("split-K", LAUNCH(KG_SPLITK), WORKSPACE(KG_SPLITK), M, N, K);
  }
#ifdef KG_WGMMA
  for (int M : {1, 8, 136, 1000}) for (int N : {8, 136, 1000}) for (int K : {8, 136, 1000}) wgmma_gemm(M, N, K);
#endif
  for (long n : {1L, 127L, 1000L, 1000003L}) reduce(n);
  softmax(1, 1); softmax(127, 1000); softmax(37, 100000);
  const ConvLaunch convs[] = {LAUNCH(KG_CONV2D), LAUNCH(KG_CONV2D_SPLIT)};
  const ConvWorkspace conv_ws[] = {WORKSPACE(KG_CONV2D), WORKSPACE(KG_CONV2D_SPLIT)};
  const char* conv_names[] = {"conv2d", "conv2d/4"};     // the second: c*r*s in 4 slices added into y
  for (int i = 0; i < 2; ++i) {
    conv2d(conv_names[i], convs[i], conv_ws[i], 2, 3, 11, 13, 5, 3, 3, 2, 2, 1, 1, 1, 1);
    conv2d(conv_names[i], convs[i], conv_ws[i], 1, 12, 130, 127, 24, 3, 3, 1, 1, 0, 0, 1, 1);
    conv2d(conv_names[i], convs[i], conv_ws[i], 2, 1, 161, 70, 32, 20, 5, 8, 2, 0, 1, 1, 1);   // DeepBench-like 20x5, stride 8x2
    conv2d(conv_names[i], convs[i], conv_ws[i], 1, 3, 17, 9, 7, 3, 2, 1, 3, 2, 0, 2, 3);       // dilated; h and w differ
  }
  if (timing) time_all();
  cudaError_t e = cudaDeviceSynchronize();
  expect(e == cudaSuccess, "the device synchronises");
  std::printf("%s (%d failures)\n", failures ? "FAILED" : "all correct", failures);
  return failures ? 1 : 0;
}
