// nearmiss AscendC CPU emulator: the subset of the AscendC API that LLM-written vector
// kernels use, with the hardware's rules reported as verdicts (C++17, g++ 12).
//
// Sources of the semantics (Ascend's public documentation, CANN 8.0 "Ascend C API reference",
// https://www.hiascend.com/document/detail/zh/CANNCommunityEdition/80RC3/apiref/ascendcopapi/):
//   [MEM]   "TPipe/InitBuffer", "TQue", "TBuf", "AllocTensor/FreeTensor", "EnQue/DeQue"
//   [COPY]  "DataCopy" (basic data copy: length and UB address 32-byte aligned),
//           "DataCopyPad" (non-aligned copy, byte lengths, padding)
//   [VEC]   "Add/Sub/Mul/Div/Max/Min" (binary, count form), "Adds/Muls/Maxs/Mins" (tensor-scalar),
//           "Exp/Ln/Abs/Sqrt/Rsqrt/Reciprocal/Relu" (unary), "Duplicate"
//   [CAST]  "Cast" and "RoundMode" (CAST_NONE/RINT/FLOOR/CEIL/ROUND/TRUNC/ODD)
//   [CMP]   "Compare" (bit mask output, one bit per element, CMPMODE), "Select" (SELMODE)
//   [RED]   "ReduceSum/ReduceMax/ReduceMin" (count form, result in dst[0]),
//           "WholeReduceSum/WholeReduceMax" (one result per repeat)
//   [SYNC]  "SetFlag/WaitFlag", "PipeBarrier"
//   [HW]    Atlas A2 (910B) training series: Unified Buffer 192 KB per AI Core
//           ("Ascend C programming guide: hardware architecture, AI Core memory").
// Every place below that makes a choice cites one of these tags.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>
#include <deque>
#include <type_traits>

#define __aicore__
#define __global__
#define __gm__
#define __inline__ inline
#define GM_ADDR uint8_t*
#define KERNEL_TYPE_AIV_ONLY
#define KERNEL_TASK_TYPE_DEFAULT(x)

using half = _Float16;  // IEEE binary16; arithmetic rounds each result to half like the vector unit [VEC]

struct bfloat16_t {  // storage type; conversions round to nearest even [CAST]
  uint16_t bits;
  bfloat16_t() = default;
  bfloat16_t(float f) {
    uint32_t u; std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { bits = 0x7fc0; return; }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = (uint16_t)(u >> 16);
  }
  operator float() const { uint32_t u = (uint32_t)bits << 16; float f; std::memcpy(&f, &u, 4); return f; }
};
using bfloat16 = bfloat16_t;

namespace nearmiss_emu {

// A broken hardware rule: thrown, caught by the launch trampoline, reported as a verdict.
struct Violation {
  std::string kind, message;
};
[[noreturn]] inline void fail(const char* kind, const std::string& msg) { throw Violation{kind, msg}; }

constexpr uint32_t UB_BYTES = 192 * 1024;  // [HW] Unified Buffer capacity per AI Core on 910B
constexpr uint32_t BLOCK_BYTES = 32;       // [COPY] DataCopy unit: 32-byte data block

struct GmBuffer { const uint8_t* base; uint64_t bytes; };
struct State {
  int64_t block_idx = 0, block_num = 1;
  std::vector<GmBuffer> gm;       // the real global buffers of this launch
  std::vector<uint8_t> ub;        // this block's Unified Buffer
  std::vector<uint32_t> gen;      // generation per 32-byte UB block (use-after-free detection)
  uint64_t ops = 0;
};
inline State& st() { static State s; return s; }

inline void check_gm(const void* p, uint64_t bytes, const char* what) {
  const uint8_t* a = (const uint8_t*)p;
  for (auto& g : st().gm)
    if (a >= g.base && a + bytes <= g.base + g.bytes) return;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s touches %llu bytes of global memory outside every buffer passed to the kernel",
                what, (unsigned long long)bytes);
  fail("gm_out_of_bounds", buf);
}
inline void poison(uint8_t* p, uint64_t n) { std::memset(p, 0xFF, n); }  // 0xFFFF.. is NaN in half/float
}  // namespace nearmiss_emu

namespace AscendC {
using nearmiss_emu::fail;

enum class TPosition { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM, TSCM, MAX };
using QuePosition = TPosition;
enum class HardEvent { MTE2_V, V_MTE2, MTE3_V, V_MTE3, MTE2_MTE3, MTE3_MTE2, S_V, V_S, MTE2_S, S_MTE2, MTE3_S, S_MTE3 };
enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL };
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD };
enum class CMPMODE { LT, GT, EQ, LE, GE, NE };
enum class SELMODE { VSEL_CMPMASK_SPR, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };

inline int64_t GetBlockIdx() { return nearmiss_emu::st().block_idx; }
inline int64_t GetBlockNum() { return nearmiss_emu::st().block_num; }
// [SYNC] ordering primitives: blocks and pipes run in program order here, so these are no-ops
template <HardEvent E> inline void SetFlag(int32_t) {}
template <HardEvent E> inline void WaitFlag(int32_t) {}
template <pipe_t P> inline void PipeBarrier() {}
inline void pipe_barrier(pipe_t) {}

template <typename T> class GlobalTensor {
 public:
  T* addr = nullptr;
  uint64_t size = 0;
  void SetGlobalBuffer(T* p, uint64_t n = 0) { addr = p; size = n; }
  T* GetPhyAddr() const { return addr; }
  T* GetPhyAddr(uint64_t off) const { return addr + off; }
  GlobalTensor operator[](uint64_t off) const { GlobalTensor g; g.addr = addr + off; g.size = size > off ? size - off : 0; return g; }
  T GetValue(uint64_t i) const { nearmiss_emu::check_gm(addr + i, sizeof(T), "GlobalTensor::GetValue"); return addr[i]; }
  void SetValue(uint64_t i, T v) { nearmiss_emu::check_gm(addr + i, sizeof(T), "GlobalTensor::SetValue"); addr[i] = v; }
  uint64_t GetSize() const { return size; }
};

// One buffer of a queue or TBuf: a UB range and the generation its tensors were handed out at.
struct BufSlot { uint32_t offset = 0, bytes = 0, gen = 0; bool allocated = false; };

template <typename T> class LocalTensor {
 public:
  uint32_t offset = 0;   // byte offset in UB
  uint32_t count = 0;    // elements visible through this tensor
  BufSlot* slot = nullptr;
  uint32_t gen = 0;
  T* ptr() const {
    if (slot == nullptr) fail("uninitialised_tensor", "a LocalTensor used before AllocTensor/DeQue/Get gave it a buffer");
    if (slot->gen != gen || !slot->allocated)
      fail("use_after_free", "a LocalTensor used after FreeTensor released its buffer [MEM: FreeTensor]");
    return (T*)(nearmiss_emu::st().ub.data() + offset);
  }
  T* need(uint32_t n, const char* what) const {
    T* p = ptr();
    if (n > count) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "%s reads or writes %u elements of a LocalTensor that holds %u", what, n, count);
      fail("ub_out_of_bounds", buf);
    }
    return p;
  }
  LocalTensor operator[](uint32_t off) const {
    if (off > count) fail("ub_out_of_bounds", "LocalTensor[] offset past the end of its buffer");
    LocalTensor t = *this; t.offset += off * sizeof(T); t.count -= off; return t;
  }
  T GetValue(uint32_t i) const { return need(i + 1, "LocalTensor::GetValue")[i]; }
  void SetValue(uint32_t i, T v) const { need(i + 1, "LocalTensor::SetValue")[i] = v; }
  uint32_t GetSize() const { return count; }
  template <typename U> LocalTensor<U> ReinterpretCast() const {
    LocalTensor<U> t; t.offset = offset; t.count = count * sizeof(T) / sizeof(U); t.slot = slot; t.gen = gen; return t;
  }
  T* GetPhyAddr() const { return ptr(); }
};

class TPipe;
struct QueBase {
  std::vector<BufSlot> slots;
  bool inited = false;
};

// [MEM] TQue<pos, depth>: InitBuffer gives it `num` buffers of `len` bytes; AllocTensor takes a free
// one (none free: on the device the core waits forever, here a verdict); EnQue/DeQue pass tensors
// in FIFO order, at most `depth` waiting.
template <TPosition POS, int32_t DEPTH = 1> class TQue : public QueBase {
 public:
  std::deque<std::pair<BufSlot*, uint32_t>> fifo;
  template <typename T> LocalTensor<T> AllocTensor() {
    if (!inited) fail("queue_not_initialised", "AllocTensor on a queue that InitBuffer never gave buffers");
    for (auto& s : slots)
      if (!s.allocated) {
        s.allocated = true; s.gen++;
        nearmiss_emu::poison(nearmiss_emu::st().ub.data() + s.offset, s.bytes);  // fresh UB is undefined: poisoned
        LocalTensor<T> t; t.offset = s.offset; t.count = s.bytes / sizeof(T); t.slot = &s; t.gen = s.gen; return t;
      }
    fail("queue_buffers_exhausted", "AllocTensor with every buffer of the queue still allocated (the device would hang): "
         "raise the buffer count in InitBuffer or FreeTensor before allocating again [MEM: AllocTensor]");
  }
  template <typename T> void EnQue(const LocalTensor<T>& t) {
    t.ptr();
    if ((int32_t)fifo.size() >= DEPTH) fail("queue_depth_exceeded", "EnQue with the queue already holding `depth` tensors [MEM: TQue depth]");
    fifo.push_back({t.slot, t.gen});
  }
  template <typename T> LocalTensor<T> DeQue() {
    if (fifo.empty()) fail("deque_without_enque", "DeQue on an empty queue: no matching EnQue (the device would hang) [MEM: DeQue]");
    auto [s, g] = fifo.front(); fifo.pop_front();
    LocalTensor<T> t; t.offset = s->offset; t.count = s->bytes / sizeof(T); t.slot = s; t.gen = g;
    t.ptr();
    return t;
  }
  template <typename T> void FreeTensor(const LocalTensor<T>& t) {
    t.ptr();
    t.slot->allocated = false; t.slot->gen++;
  }
  bool VacantInQue() const { return (int32_t)fifo.size() < DEPTH; }
};
template <TPosition POS> class TQueBind : public TQue<POS, 1> {};

// [MEM] TBuf: one buffer for temporaries; Get<T>() returns all of it, Get<T>(n) the first n elements.
template <TPosition POS = TPosition::VECCALC> class TBuf : public QueBase {
 public:
  template <typename T> LocalTensor<T> Get() const { return Get<T>(slots.empty() ? 0 : slots[0].bytes / sizeof(T)); }
  template <typename T> LocalTensor<T> Get(uint32_t n) const {
    if (!inited) fail("queue_not_initialised", "TBuf::Get on a buffer that InitBuffer never sized");
    BufSlot* s = const_cast<BufSlot*>(&slots[0]);
    if (n * sizeof(T) > s->bytes) fail("ub_out_of_bounds", "TBuf::Get asks for more elements than the buffer holds");
    LocalTensor<T> t; t.offset = s->offset; t.count = n; t.slot = s; t.gen = s->gen; return t;
  }
};

class TPipe {
 public:
  uint32_t used = 0;
  TPipe() {}
  // [MEM][HW] each buffer is rounded up to 32 bytes; all buffers of the pipe share the 192 KB UB.
  void InitBuffer(QueBase& q, uint32_t num, uint32_t len) {
    if (num == 0 || len == 0) fail("bad_init_buffer", "InitBuffer with zero buffers or zero length");
    uint32_t aligned = (len + 31) / 32 * 32;
    uint64_t total = used + (uint64_t)num * aligned;
    if (total > nearmiss_emu::UB_BYTES) {
      char buf[220];
      std::snprintf(buf, sizeof buf, "InitBuffer brings the Unified Buffer use to %llu bytes, over the %u bytes of one AI Core [HW]",
                    (unsigned long long)total, nearmiss_emu::UB_BYTES);
      fail("ub_overflow", buf);
    }
    q.slots.assign(num, BufSlot{});
    for (uint32_t i = 0; i < num; i++) { q.slots[i].offset = used + i * aligned; q.slots[i].bytes = aligned; }
    q.inited = true;
    used += num * aligned;
  }
  template <TPosition P> void InitBuffer(TBuf<P>& b, uint32_t len) {
    InitBuffer(static_cast<QueBase&>(b), 1, len);
    b.slots[0].allocated = true; b.slots[0].gen = 1;
    nearmiss_emu::poison(nearmiss_emu::st().ub.data() + b.slots[0].offset, b.slots[0].bytes);
  }
  void Destroy() {}
  void Reset() {}
};

// ------------------------------------------------------------------ data movement [COPY]
struct DataCopyParams {  // lengths in 32-byte blocks, strides in 32-byte blocks
  uint16_t blockCount = 1, blockLen = 0, srcStride = 0, dstStride = 0;
  DataCopyParams() = default;
  DataCopyParams(uint16_t c, uint16_t l, uint16_t s, uint16_t d) : blockCount(c), blockLen(l), srcStride(s), dstStride(d) {}
};
struct DataCopyExtParams {  // DataCopyPad: blockLen in bytes; GM strides in bytes, UB strides in 32-byte blocks
  uint16_t blockCount = 1; uint32_t blockLen = 0, srcStride = 0, dstStride = 0, rsv = 0;
  DataCopyExtParams() = default;
  DataCopyExtParams(uint16_t c, uint32_t l, uint32_t s, uint32_t d, uint32_t r = 0) : blockCount(c), blockLen(l), srcStride(s), dstStride(d), rsv(r) {}
};
template <typename T> struct DataCopyPadExtParams {
  bool isPad = false; uint8_t leftPadding = 0, rightPadding = 0; T paddingValue = T(0);
  DataCopyPadExtParams() = default;
  DataCopyPadExtParams(bool p, uint8_t l, uint8_t r, T v) : isPad(p), leftPadding(l), rightPadding(r), paddingValue(v) {}
};
template <typename T> using DataCopyPadParams = DataCopyPadExtParams<T>;

namespace detail {
template <typename T> void check_len(uint32_t count, const char* what) {
  if ((uint64_t)count * sizeof(T) % nearmiss_emu::BLOCK_BYTES != 0) {
    char buf[240];
    std::snprintf(buf, sizeof buf, "%s of %u elements (%llu bytes): DataCopy moves whole 32-byte blocks, "
                  "use DataCopyPad for a length that is not a multiple of 32 bytes [COPY]", what, count,
                  (unsigned long long)count * sizeof(T));
    fail("datacopy_misaligned", buf);
  }
}
}  // namespace detail

template <typename T> void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, uint32_t count) {
  detail::check_len<T>(count, "DataCopy GM->UB");
  T* d = dst.need(count, "DataCopy GM->UB");
  nearmiss_emu::check_gm(src.addr, (uint64_t)count * sizeof(T), "DataCopy GM->UB");
  std::memcpy(d, src.addr, (size_t)count * sizeof(T));
}
template <typename T> void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
  detail::check_len<T>(count, "DataCopy UB->GM");
  const T* s = src.need(count, "DataCopy UB->GM");
  nearmiss_emu::check_gm(dst.addr, (uint64_t)count * sizeof(T), "DataCopy UB->GM");
  std::memcpy(dst.addr, s, (size_t)count * sizeof(T));
}
template <typename T> void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t count) {
  detail::check_len<T>(count, "DataCopy UB->UB");
  std::memmove(dst.need(count, "DataCopy UB->UB"), src.need(count, "DataCopy UB->UB"), (size_t)count * sizeof(T));
}
// strided forms: blockCount blocks of blockLen*32 bytes, gaps of src/dstStride*32 bytes
template <typename T> void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
  const uint32_t e = 32 / sizeof(T);
  for (uint32_t b = 0; b < p.blockCount; b++) {
    uint32_t n = p.blockLen * e;
    const T* s = src.addr + (uint64_t)b * (p.blockLen + p.srcStride) * e;
    uint32_t doff = b * (p.blockLen + p.dstStride) * e;
    T* d = dst.need(doff + n, "DataCopy GM->UB (params)") + doff;
    nearmiss_emu::check_gm(s, (uint64_t)n * sizeof(T), "DataCopy GM->UB (params)");
    std::memcpy(d, s, (size_t)n * sizeof(T));
  }
}
template <typename T> void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  const uint32_t e = 32 / sizeof(T);
  for (uint32_t b = 0; b < p.blockCount; b++) {
    uint32_t n = p.blockLen * e;
    T* d = dst.addr + (uint64_t)b * (p.blockLen + p.dstStride) * e;
    uint32_t soff = b * (p.blockLen + p.srcStride) * e;
    const T* s = src.need(soff + n, "DataCopy UB->GM (params)") + soff;
    nearmiss_emu::check_gm(d, (uint64_t)n * sizeof(T), "DataCopy UB->GM (params)");
    std::memcpy(d, s, (size_t)n * sizeof(T));
  }
}
// [COPY] DataCopyPad GM->UB: blockCount rows of blockLen bytes; each row lands 32-byte aligned in UB,
// the rest of the row's last block is padding (paddingValue when isPad, otherwise left undefined).
template <typename T> void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                                       const DataCopyPadExtParams<T>& pad = {}) {
  uint64_t rowUb = ((uint64_t)p.blockLen + 31) / 32 * 32;
  for (uint32_t b = 0; b < p.blockCount; b++) {
    const uint8_t* s = (const uint8_t*)src.addr + (uint64_t)b * (p.blockLen + p.srcStride);
    uint64_t doff = b * (rowUb + (uint64_t)p.dstStride * 32);
    uint8_t* d = (uint8_t*)dst.need((uint32_t)((doff + rowUb) / sizeof(T)), "DataCopyPad GM->UB") + doff;
    nearmiss_emu::check_gm(s, p.blockLen, "DataCopyPad GM->UB");
    std::memcpy(d, s, p.blockLen);
    if (pad.isPad)
      for (uint64_t i = p.blockLen / sizeof(T); i < rowUb / sizeof(T); i++) ((T*)d)[i] = pad.paddingValue;
  }
}
template <typename T> void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
  uint64_t rowUb = ((uint64_t)p.blockLen + 31) / 32 * 32;
  for (uint32_t b = 0; b < p.blockCount; b++) {
    uint8_t* d = (uint8_t*)dst.addr + (uint64_t)b * (p.blockLen + p.dstStride);
    uint64_t soff = b * (rowUb + (uint64_t)p.srcStride * 32);
    const uint8_t* s = (const uint8_t*)src.need((uint32_t)((soff + rowUb) / sizeof(T)), "DataCopyPad UB->GM") + soff;
    nearmiss_emu::check_gm(d, p.blockLen, "DataCopyPad UB->GM");
    std::memcpy(d, s, p.blockLen);
  }
}
template <typename T> void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                                       const DataCopyPadExtParams<T>& pad = {}) {
  DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride), pad);
}
template <typename T> void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride));
}

// ------------------------------------------------------------------ vector ops [VEC]
// Count form: `count` elements from the start of each tensor. Each result is computed in float (double
// for float inputs) and rounded to the element type once, as the vector unit rounds each instruction.
namespace detail {
template <typename T> inline double ld(T v) { return (double)(float)v; }
template <typename T> inline T sto(double v) { return (T)(float)v; }
template <> inline double ld<int32_t>(int32_t v) { return (double)v; }
template <> inline int32_t sto<int32_t>(double v) { return (int32_t)v; }
template <typename T, typename F> void unary(const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t n, const char* w, F f) {
  if (n < 0) fail("bad_count", std::string(w) + " with a negative count");
  T* d = dst.need(n, w); const T* s = src.need(n, w);
  for (int32_t i = 0; i < n; i++) d[i] = sto<T>(f(ld(s[i])));
}
template <typename T, typename F> void binary(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, int32_t n, const char* w, F f) {
  if (n < 0) fail("bad_count", std::string(w) + " with a negative count");
  T* d = dst.need(n, w); const T* x = a.need(n, w); const T* y = b.need(n, w);
  for (int32_t i = 0; i < n; i++) d[i] = sto<T>(f(ld(x[i]), ld(y[i])));
}
inline double fin(double v, bool is_f32) { return is_f32 ? (double)(float)v : v; }
}  // namespace detail

#define NM_BIN(NAME, EXPR) \
  template <typename T> void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, int32_t n) { \
    detail::binary(dst, a, b, n, #NAME, [](double x, double y) { return (EXPR); }); }
NM_BIN(Add, (double)((float)x + (float)y))
NM_BIN(Sub, (double)((float)x - (float)y))
NM_BIN(Mul, (double)((float)x * (float)y))
NM_BIN(Div, (double)((float)x / (float)y))
NM_BIN(Max, (x > y || std::isnan(x)) ? x : y)
NM_BIN(Min, (x < y || std::isnan(x)) ? x : y)
#undef NM_BIN
#define NM_SCA(NAME, EXPR) \
  template <typename T, typename S> void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& a, S s, int32_t n) { \
    double y = detail::ld((T)s); detail::unary(dst, a, n, #NAME, [y](double x) { return (EXPR); }); }
NM_SCA(Adds, (double)((float)x + (float)y))
NM_SCA(Muls, (double)((float)x * (float)y))
NM_SCA(Maxs, x > y ? x : y)
NM_SCA(Mins, x < y ? x : y)
#undef NM_SCA
#define NM_UN(NAME, EXPR) \
  template <typename T> void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& a, int32_t n) { \
    detail::unary(dst, a, n, #NAME, [](double x) { float f = (float)x; return (double)(EXPR); }); }
NM_UN(Exp, std::exp(f))
NM_UN(Ln, std::log(f))
NM_UN(Abs, std::fabs(f))
NM_UN(Sqrt, std::sqrt(f))
NM_UN(Rsqrt, 1.0f / std::sqrt(f))
NM_UN(Reciprocal, 1.0f / f)
NM_UN(Relu, f > 0.0f ? f : 0.0f)
NM_UN(Not, f)
#undef NM_UN
template <typename T, typename S> void Duplicate(const LocalTensor<T>& dst, S v, int32_t n) {
  T* d = dst.need(n, "Duplicate"); for (int32_t i = 0; i < n; i++) d[i] = (T)v;
}
// LeakyRelu(dst, src, alpha, n) [VEC]: x >= 0 ? x : alpha * x
template <typename T, typename S> void LeakyRelu(const LocalTensor<T>& dst, const LocalTensor<T>& a, S alpha, int32_t n) {
  float al = (float)alpha; detail::unary(dst, a, n, "LeakyRelu", [al](double x) { float f = (float)x; return (double)(f >= 0 ? f : (float)(al * f)); });
}

// ------------------------------------------------------------------ Cast [CAST]
namespace detail {
// round a double to the destination type with the given mode; CAST_NONE is RINT when precision is lost [CAST]
template <typename D> D round_to(double v, RoundMode m) {
  if constexpr (std::is_integral_v<D>) {
    double r = v;
    switch (m) {
      case RoundMode::CAST_FLOOR: r = std::floor(v); break;
      case RoundMode::CAST_CEIL: r = std::ceil(v); break;
      case RoundMode::CAST_ROUND: r = std::round(v); break;  // half away from zero
      case RoundMode::CAST_TRUNC: r = std::trunc(v); break;
      default: r = std::nearbyint(v); break;  // RINT: half to even
    }
    if (std::isnan(r)) return 0;
    if (r > (double)std::numeric_limits<D>::max()) return std::numeric_limits<D>::max();  // saturate
    if (r < (double)std::numeric_limits<D>::lowest()) return std::numeric_limits<D>::lowest();
    return (D)r;
  } else {
    D n = (D)(float)v;  // nearest even (for float->half, float->bf16; double holds a float exactly)
    double back = (double)(float)n;
    if (back == v || std::isnan(v)) return n;
    auto step = [](D x, bool up) {  // neighbour of x in D: one step of the 16-bit encoding (sign-magnitude)
      static_assert(sizeof(D) == 2, "half and bfloat16 are 16-bit encodings");
      uint16_t b; std::memcpy(&b, &x, 2);
      const bool neg = (b & 0x8000u) != 0, zero = (b & 0x7fffu) == 0;
      if (zero) b = up ? 0x0001u : 0x8001u;                  // +-0 -> smallest subnormal of the step's sign
      else if (neg == up) b = (uint16_t)(b - 1);              // towards zero
      else b = (uint16_t)(b + 1);                             // away from zero (max finite -> inf)
      D y; std::memcpy(&y, &b, 2);
      return y;
    };
    D lo = back < v ? n : step(n, false), hi = back > v ? n : step(n, true);
    switch (m) {
      case RoundMode::CAST_FLOOR: return lo;
      case RoundMode::CAST_CEIL: return hi;
      case RoundMode::CAST_TRUNC: return v > 0 ? lo : hi;
      case RoundMode::CAST_ROUND: {
        double dl = v - (double)(float)lo, dh = (double)(float)hi - v;
        if (dl == dh) return v > 0 ? hi : lo;  // ties away from zero
        return dl < dh ? lo : hi;
      }
      case RoundMode::CAST_ODD: {  // round to odd: the neighbour whose last mantissa bit is 1
        uint16_t bl; std::memcpy(&bl, &lo, 2);
        return (bl & 1) ? lo : hi;
      }
      default: return n;
    }
  }
}
}  // namespace detail
template <typename D, typename S> void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src, RoundMode m, uint32_t n) {
  D* d = dst.need(n, "Cast"); const S* s = src.need(n, "Cast");
  std::vector<double> tmp(n);
  for (uint32_t i = 0; i < n; i++) tmp[i] = std::is_integral_v<S> ? (double)s[i] : (double)(float)s[i];
  for (uint32_t i = 0; i < n; i++) {
    if constexpr (std::is_same_v<D, float>) {
      d[i] = (m == RoundMode::CAST_NONE || !std::is_integral_v<S>) ? (float)tmp[i] : (float)tmp[i];
    } else {
      d[i] = detail::round_to<D>(tmp[i], m);
    }
  }
}

// ------------------------------------------------------------------ Compare / Select [CMP]
// Compare writes one bit per element (bit i%8 of byte i/8), 1 where the relation holds.
template <typename T> void Compare(const LocalTensor<uint8_t>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b, CMPMODE m, uint32_t n) {
  uint8_t* d = dst.need((n + 7) / 8, "Compare"); const T* x = a.need(n, "Compare"); const T* y = b.need(n, "Compare");
  std::memset(d, 0, (n + 7) / 8);
  for (uint32_t i = 0; i < n; i++) {
    float p = (float)x[i], q = (float)y[i]; bool r = false;
    switch (m) { case CMPMODE::LT: r = p < q; break; case CMPMODE::GT: r = p > q; break; case CMPMODE::EQ: r = p == q; break;
                 case CMPMODE::LE: r = p <= q; break; case CMPMODE::GE: r = p >= q; break; case CMPMODE::NE: r = p != q; break; }
    if (r) d[i / 8] |= (uint8_t)(1u << (i % 8));
  }
}
template <typename T, typename S> void CompareScalar(const LocalTensor<uint8_t>& dst, const LocalTensor<T>& a, S s, CMPMODE m, uint32_t n) {
  LocalTensor<T> tmp = a; (void)tmp;
  uint8_t* d = dst.need((n + 7) / 8, "CompareScalar"); const T* x = a.need(n, "CompareScalar"); float q = (float)(T)s;
  std::memset(d, 0, (n + 7) / 8);
  for (uint32_t i = 0; i < n; i++) {
    float p = (float)x[i]; bool r = false;
    switch (m) { case CMPMODE::LT: r = p < q; break; case CMPMODE::GT: r = p > q; break; case CMPMODE::EQ: r = p == q; break;
                 case CMPMODE::LE: r = p <= q; break; case CMPMODE::GE: r = p >= q; break; case CMPMODE::NE: r = p != q; break; }
    if (r) d[i / 8] |= (uint8_t)(1u << (i % 8));
  }
}
// Select: bit 1 takes src0, bit 0 takes src1 (a tensor, or a scalar in VSEL_TENSOR_SCALAR_MODE).
template <typename T, typename U> void Select(const LocalTensor<T>& dst, const LocalTensor<U>& mask, const LocalTensor<T>& a,
                                             const LocalTensor<T>& b, SELMODE, uint32_t n) {
  T* d = dst.need(n, "Select"); const uint8_t* m = (const uint8_t*)mask.need((n + 8 * sizeof(U) - 1) / (8 * sizeof(U)), "Select");
  const T* x = a.need(n, "Select"); const T* y = b.need(n, "Select");
  for (uint32_t i = 0; i < n; i++) d[i] = ((m[i / 8] >> (i % 8)) & 1) ? x[i] : y[i];
}
template <typename T, typename U, typename S, typename = std::enable_if_t<std::is_arithmetic_v<S> || std::is_same_v<S, half>>>
void Select(const LocalTensor<T>& dst, const LocalTensor<U>& mask, const LocalTensor<T>& a, S s, SELMODE, uint32_t n) {
  T* d = dst.need(n, "Select"); const uint8_t* m = (const uint8_t*)mask.need((n + 8 * sizeof(U) - 1) / (8 * sizeof(U)), "Select");
  const T* x = a.need(n, "Select");
  for (uint32_t i = 0; i < n; i++) d[i] = ((m[i / 8] >> (i % 8)) & 1) ? x[i] : (T)s;
}

// ------------------------------------------------------------------ reductions [RED]
// Count form: dst[0] = reduction of src[0..n); the work tensor is scratch (poisoned here).
// ReduceMax/Min with calIndex also store the index of the first extreme in dst[1] (as the element type's bits).
// Sums are pairwise (tree) sums in fp32, rounded once to T; the device's exact order is not modelled.
namespace detail {
// pairwise (binary tree) sum in fp32: the device adds pairs of partial sums level by level [RED]
template <typename T> float tree_sum(const T* s, int32_t n) {
  if (n <= 8) { float a = 0.0f; for (int32_t i = 0; i < n; i++) a += (float)s[i]; return a; }
  int32_t h = n / 2;
  return tree_sum(s, h) + tree_sum(s + h, n - h);
}
}  // namespace detail
template <typename T> void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t n) {
  const T* s = src.need(n, "ReduceSum");
  float acc = detail::tree_sum(s, n);
  (void)work.ptr();
  dst.need(1, "ReduceSum")[0] = (T)acc;
}
namespace detail {
template <typename T, bool MAX> void reduce_ext(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t n, bool idx) {
  const T* s = src.need(n, MAX ? "ReduceMax" : "ReduceMin"); (void)work.ptr();
  if (n <= 0) fail("bad_count", "reduction over zero elements");
  int32_t best = 0;
  for (int32_t i = 1; i < n; i++) if (MAX ? ((float)s[i] > (float)s[best]) : ((float)s[i] < (float)s[best])) best = i;
  T* d = dst.need(idx ? 2 : 1, MAX ? "ReduceMax" : "ReduceMin");
  d[0] = s[best];
  if (idx) { uint32_t u = (uint32_t)best; std::memcpy(&d[1], &u, sizeof(T) < 4 ? sizeof(T) : 4); }
}
}  // namespace detail
template <typename T> void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t n, bool calIndex = false) {
  detail::reduce_ext<T, true>(dst, src, work, n, calIndex);
}
template <typename T> void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work, int32_t n, bool calIndex = false) {
  detail::reduce_ext<T, false>(dst, src, work, n, calIndex);
}
// WholeReduceSum/Max(dst, src, mask, repeatTimes, dstRepStride, srcBlkStride, srcRepStride):
// repeat r reduces `mask` elements starting r*srcRepStride*32 bytes into src; result r lands at
// dst[r*dstRepStride] (counted in elements, as in the count-mask form). srcBlkStride must be 1 here.
namespace detail {
template <typename T, int OP> void whole(const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t mask, int32_t rep,
                                         int32_t dstRep, int32_t blk, int32_t srcRep) {
  if (blk != 1) fail("unsupported", "WholeReduce with srcBlkStride != 1 is not modelled by the emulator");
  const uint32_t per = 32 / sizeof(T);
  const T* s = src.need(((rep - 1) * srcRep) * per + mask, "WholeReduce");
  T* d = dst.need((rep - 1) * (dstRep > 0 ? dstRep : 1) + 1, "WholeReduce");
  for (int32_t r = 0; r < rep; r++) {
    const T* row = s + r * srcRep * per; float acc = (float)row[0];
    for (int32_t i = 1; i < mask; i++) {
      float v = (float)row[i];
      acc = OP == 0 ? acc + v : OP == 1 ? (v > acc ? v : acc) : (v < acc ? v : acc);
    }
    d[r * (dstRep > 0 ? dstRep : 1)] = (T)acc;
  }
}
}  // namespace detail
template <typename T> void WholeReduceSum(const LocalTensor<T>& d, const LocalTensor<T>& s, int32_t mask, int32_t rep, int32_t dr, int32_t b, int32_t sr) { detail::whole<T, 0>(d, s, mask, rep, dr, b, sr); }
template <typename T> void WholeReduceMax(const LocalTensor<T>& d, const LocalTensor<T>& s, int32_t mask, int32_t rep, int32_t dr, int32_t b, int32_t sr) { detail::whole<T, 1>(d, s, mask, rep, dr, b, sr); }
template <typename T> void WholeReduceMin(const LocalTensor<T>& d, const LocalTensor<T>& s, int32_t mask, int32_t rep, int32_t dr, int32_t b, int32_t sr) { detail::whole<T, 2>(d, s, mask, rep, dr, b, sr); }

}  // namespace AscendC

using namespace AscendC;
