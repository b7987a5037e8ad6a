// kernelgen CPU emulator: nvcuda::wmma (mma.h) for the 16x16x16 shapes with __half / __nv_bfloat16
// inputs and float (or __half) accumulators, included by shim.h.
//
// CUDA leaves the distribution of a fragment's 256 elements over the lanes opaque; here element e of
// an A or B tile (row-major index: A[m][k] = e/16, e%16; B[k][n]) is held by lane e % 32 in slot
// e / 32, so every fragment has 8 elements per lane. An accumulator's element (r, c) is held by lane
// 2c + r % 2 in slot r / 2 instead: not the lane that a walk of a stored tile by e = lane, lane + 32, ...
// reads it with (as the GPU's layout is not), so a warp that reads a staging area and stores the next
// fragment there without a __syncwarp between races in the checker as on the GPU. Loads and stores are
// per lane; mma_sync gathers the A row and B column each of the lane's D elements needs with warp
// shuffles, so every lane's result is right only if all 32 lanes call it together, as on the GPU.
#ifndef KG_WMMA_H
#define KG_WMMA_H

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static_assert(M == 16 && N == 16 && K == 16, "the CPU emulator's wmma has the 16x16x16 shape only");
  static_assert(std::is_same<T, __half>::value || std::is_same<T, __nv_bfloat16>::value ||
                (std::is_same<Use, accumulator>::value && std::is_same<T, float>::value),
                "the CPU emulator's wmma has __half and __nv_bfloat16 inputs, float or __half accumulators");
  typedef T element_type;
  typedef T storage_element_type;
  enum { num_elements = 8 };
  T x[num_elements];
};

namespace detail {
inline int lane() { return ((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % 32; }
// (row, column) of slot s of this lane in an A or B fragment: element e = 32 s + lane of the 16x16 tile, row-major.
inline int row(int s) { return (32 * s + lane()) / 16; }
inline int col(int s) { return (32 * s + lane()) % 16; }
// (row, column) of slot s of this lane in an accumulator: row 2 s + lane % 2, column lane / 2.
inline int acc_row(int s) { return 2 * s + lane() % 2; }
inline int acc_col(int) { return lane() / 2; }
inline float as_float(float v) { return v; }
inline float as_float(__half v) { return __half2float(v); }
inline float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <class T> inline T from_float(float v) { return T(v); }
}  // namespace detail

template <class Use, int M, int N, int K, class T, class L>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const T& v) {
  for (int s = 0; s < 8; ++s) f.x[s] = v;
}
template <class Use, int M, int N, int K, class T, class L, class V>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const V& v) {
  fill_fragment(f, T(v));
}

// matrix_a / matrix_b: the layout is the fragment's; element (r, c) of a row-major tile is p[r*ldm + c].
template <class Use, class T, class L>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L>& f, const T* p, unsigned ldm) {
  static_assert(std::is_same<L, row_major>::value || std::is_same<L, col_major>::value,
                "matrix_a and matrix_b fragments need a row_major or col_major layout");
  for (int s = 0; s < 8; ++s) {
    const int r = detail::row(s), c = detail::col(s);
    f.x[s] = std::is_same<L, row_major>::value ? p[r * ldm + c] : p[c * ldm + r];
  }
}
template <class T>
inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, T, void>& f, const T* p, unsigned ldm, layout_t l) {
  for (int s = 0; s < 8; ++s) {
    const int r = detail::acc_row(s), c = detail::acc_col(s);
    f.x[s] = l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r];
  }
}
template <class T>
inline void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T, void>& f, unsigned ldm, layout_t l) {
  for (int s = 0; s < 8; ++s) {
    const int r = detail::acc_row(s), c = detail::acc_col(s);
    (l == mem_row_major ? p[r * ldm + c] : p[c * ldm + r]) = f.x[s];
  }
}

// D = A B + C. Slot s of lane l is D[2s + l%2][l/2]: its A row 2s + l%2 is slot s of lanes
// 16(l%2) + k, and its B column l/2 is slot k/2 of lanes 16(k%2) + l/2, for k = 0..15. Products are
// exact in fp32; the sum is fp32 in k order (exact for integer-valued data).
template <class TA, class LA, class LB, class TC, class TD>
inline void mma_sync(fragment<accumulator, 16, 16, 16, TD, void>& d, const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
                     const fragment<matrix_b, 16, 16, 16, TA, LB>& b,
                     const fragment<accumulator, 16, 16, 16, TC, void>& c) {
  const int l = detail::lane();
  float bcol[16];
  for (int k = 0; k < 16; ++k) bcol[k] = detail::as_float(__shfl_sync(0xffffffffu, b.x[k / 2], 16 * (k % 2) + l / 2));
  float out[8];
  for (int s = 0; s < 8; ++s) {
    float acc = detail::as_float(c.x[s]);
    for (int k = 0; k < 16; ++k) acc += detail::as_float(__shfl_sync(0xffffffffu, a.x[s], 16 * (l % 2) + k)) * bcol[k];
    out[s] = acc;
  }
  for (int s = 0; s < 8; ++s) d.x[s] = detail::from_float<TD>(out[s]);   // d may alias c
}
}  // namespace wmma
}  // namespace nvcuda

#endif  // KG_WMMA_H
