// nearmiss AscendC emulator: the PyTorch binding of a MultiKernelBench operator (python_bind_src):
// at::Tensor reduced to a contiguous buffer with sizes and a dtype, at::empty/empty_like,
// EXEC_NPU_CMD (tiling function, then the kernel's blocks in turn) and PYBIND11_MODULE's m.def.
// Sources: "torch_npu custom operator adaptation" (EXEC_NPU_CMD(aclnnOpName, inputs..., outputs...)),
// CANN op project conventions (op AddCustom <-> kernel add_custom <-> aclnnAddCustom).
#pragma once
#include "nearmiss_host.h"
#include <cctype>
#include <tuple>
#include <utility>

namespace at {
enum class ScalarType { Float = 0, Half = 1, BFloat16 = 2, Int = 3, Long = 4, Bool = 5, Char = 6, Byte = 7, Short = 8, Double = 9 };
constexpr ScalarType kFloat = ScalarType::Float, kHalf = ScalarType::Half, kBFloat16 = ScalarType::BFloat16,
                     kInt = ScalarType::Int, kLong = ScalarType::Long, kBool = ScalarType::Bool;
inline size_t elem_size(ScalarType t) {
  switch (t) { case ScalarType::Half: case ScalarType::BFloat16: case ScalarType::Short: return 2;
               case ScalarType::Long: case ScalarType::Double: return 8; case ScalarType::Bool: case ScalarType::Char:
               case ScalarType::Byte: return 1; default: return 4; }
}
using IntArrayRef = std::vector<int64_t>;
struct TensorOptions {
  ScalarType dt = ScalarType::Float;
  TensorOptions dtype(ScalarType t) const { TensorOptions o = *this; o.dt = t; return o; }
  template <typename D> TensorOptions device(D) const { return *this; }
};
class Tensor {
 public:
  std::vector<int64_t> sz;
  ScalarType dt = ScalarType::Float;
  uint8_t* ptr = nullptr;
  std::shared_ptr<std::vector<uint8_t>> own;
  const std::vector<int64_t>& sizes() const { return sz; }
  int64_t size(int64_t i) const { return sz[i < 0 ? i + (int64_t)sz.size() : i]; }
  int64_t dim() const { return (int64_t)sz.size(); }
  int64_t numel() const { int64_t n = 1; for (auto d : sz) n *= d; return n; }
  ScalarType scalar_type() const { return dt; }
  ScalarType dtype() const { return dt; }
  TensorOptions options() const { return TensorOptions{dt}; }
  size_t element_size() const { return elem_size(dt); }
  size_t nbytes() const { return numel() * element_size(); }
  void* data_ptr() const { return ptr; }
  template <typename T> T* data_ptr() const { return (T*)ptr; }
  bool is_contiguous() const { return true; }
  Tensor contiguous() const { return *this; }
  Tensor view(std::vector<int64_t> s) const { Tensor t = *this; t.sz = s; return t; }
  Tensor reshape(std::vector<int64_t> s) const { return view(s); }
};
inline Tensor empty(const std::vector<int64_t>& sizes, TensorOptions o = {}) {
  Tensor t; t.sz = sizes; t.dt = o.dt;
  t.own = std::make_shared<std::vector<uint8_t>>(std::max<size_t>(1, t.nbytes()), 0xFF);  // poisoned, like fresh memory
  t.ptr = t.own->data(); return t;
}
inline Tensor empty_like(const Tensor& x) { return empty(x.sz, x.options()); }
inline Tensor empty_like(const Tensor& x, TensorOptions o) { return empty(x.sz, o); }
inline Tensor zeros(const std::vector<int64_t>& sizes, TensorOptions o = {}) {
  Tensor t = empty(sizes, o); std::memset(t.ptr, 0, t.own->size()); return t;
}
inline Tensor zeros_like(const Tensor& x) { return zeros(x.sz, x.options()); }
}  // namespace at
namespace torch { using at::Tensor; using at::empty; using at::empty_like; using at::zeros; using at::zeros_like;
                  using at::TensorOptions; using at::ScalarType; constexpr auto kFloat = at::kFloat; constexpr auto kHalf = at::kHalf; }
namespace c10 { using at::IntArrayRef; using at::ScalarType; }

namespace nearmiss_emu {

inline ge::DataType ge_type(at::ScalarType t) {
  switch (t) { case at::ScalarType::Half: return ge::DT_FLOAT16; case at::ScalarType::BFloat16: return ge::DT_BF16;
               case at::ScalarType::Int: return ge::DT_INT32; case at::ScalarType::Long: return ge::DT_INT64;
               default: return ge::DT_FLOAT; }
}
inline void collect(std::vector<at::Tensor>&, gert::RuntimeAttrs&) {}
template <typename A, typename... R> void collect(std::vector<at::Tensor>& ts, gert::RuntimeAttrs& at_, A&& a, R&&... rest) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<D, at::Tensor>) {
    ts.push_back(a);
  } else if constexpr (std::is_floating_point_v<D>) {
    float f = (float)a; std::vector<uint8_t> v(sizeof f); std::memcpy(v.data(), &f, sizeof f); at_.vals.push_back(v);
  } else if constexpr (std::is_integral_v<D>) {
    int64_t i = (int64_t)a; std::vector<uint8_t> v(sizeof i); std::memcpy(v.data(), &i, sizeof i); at_.vals.push_back(v);
  }
  collect(ts, at_, std::forward<R>(rest)...);
}
inline std::string snake(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); i++) {
    if (std::isupper((unsigned char)s[i]) && i > 0) o += '_';
    o += (char)std::tolower((unsigned char)s[i]);
  }
  return o;
}
// ON_LAUNCH for the Python side: the kernel name and block count of the last EXEC_NPU_CMD
inline std::vector<std::pair<std::string, uint32_t>>& launches() { static std::vector<std::pair<std::string, uint32_t>> v; return v; }

template <typename... A> void exec_npu_cmd(const char* aclnn, A&&... args) {
  std::string op = aclnn;
  if (op.rfind("aclnn", 0) == 0) op = op.substr(5);
  std::vector<at::Tensor> ts; gert::TilingContext ctx;
  collect(ts, ctx.attrs, std::forward<A>(args)...);
  int nin = op_inputs().count(op) ? op_inputs()[op] : (int)ts.size() - 1;
  for (size_t i = 0; i < ts.size(); i++) {
    gert::Tensor d; d.s.shape.dims = ts[i].sz; d.dt = ge_type(ts[i].dt);
    ((int)i < nin ? ctx.inputs : ctx.outputs).push_back(d);
  }
  auto f = tiling_fns().find(op);
  if (f == tiling_fns().end()) fail("no_tiling_function", "EXEC_NPU_CMD(" + std::string(aclnn) + "): no OpDef registered a tiling function for " + op);
  if (f->second(&ctx) != ge::GRAPH_SUCCESS) fail("tiling_failed", "the tiling function of " + op + " returned GRAPH_FAILED");
  auto k = kernels().find(snake(op));
  if (k == kernels().end()) fail("no_kernel", "no kernel named " + snake(op) + " for operator " + op);
  size_t ws = 0; for (auto w : ctx.workspace) ws += w;
  if (ws > (256u << 20)) fail("workspace_too_large", "workspace over 256 MB");
  std::vector<uint8_t> workspace(std::max<size_t>(ws, 32), 0xFF);
  std::vector<void*> argv;
  auto& s = st(); s.gm.clear();
  for (auto& t : ts) { argv.push_back(t.ptr); s.gm.push_back({t.ptr, (uint64_t)t.nbytes()}); }
  argv.push_back(workspace.data()); s.gm.push_back({workspace.data(), workspace.size()});
  argv.push_back(ctx.tiling.buf); s.gm.push_back({ctx.tiling.buf, sizeof(ctx.tiling.buf)});
  if (ctx.block_dim < 1 || ctx.block_dim > 65535) fail("bad_block_dim", "SetBlockDim outside 1..65535");
  s.block_num = ctx.block_dim;
  for (int64_t b = 0; b < (int64_t)ctx.block_dim; b++) {
    s.block_idx = b; s.ub.assign(UB_BYTES, 0xFF);
    try { k->second(argv.data()); }
    catch (Violation& v) { v.message = "[block " + std::to_string(b) + "] " + v.message; throw; }
  }
  launches().push_back({snake(op), ctx.block_dim});
}

// PYBIND11_MODULE's m.def: each bound function takes tensors and scalars and returns a tensor
struct Arg { bool is_tensor = false; at::Tensor t; double d = 0; };
using Bound = std::function<at::Tensor(std::vector<Arg>&)>;
template <typename P> auto from_arg(Arg& a) {
  using D = std::decay_t<P>;
  if constexpr (std::is_same_v<D, at::Tensor>) return a.t;
  else return (D)a.d;
}
template <typename R, typename... P, size_t... I> Bound bind_impl(R (*f)(P...), std::index_sequence<I...>) {
  return [f](std::vector<Arg>& a) -> at::Tensor {
    if (a.size() != sizeof...(P)) fail("bad_arity", "the bound function takes " + std::to_string(sizeof...(P)) + " arguments");
    return f(from_arg<P>(a[I])...);
  };
}
struct Module {
  std::map<std::string, Bound> fns;
  template <typename R, typename... P, typename... X> Module& def(const char* name, R (*f)(P...), X&&...) {
    fns[name] = bind_impl(f, std::index_sequence_for<P...>{}); return *this; }
  template <typename... X> Module& impl(X&&...) { return *this; }
};
inline Module& module() { static Module m; return m; }
}  // namespace nearmiss_emu

#define EXEC_NPU_CMD(aclnn, ...) nearmiss_emu::exec_npu_cmd(#aclnn, __VA_ARGS__)
#define TORCH_EXTENSION_NAME custom_ops_lib
#define PYBIND11_MODULE(name, m) \
  static void nm_pybind_init(nearmiss_emu::Module& m); \
  static int nm_pybind_reg = (nm_pybind_init(nearmiss_emu::module()), 0); \
  static void nm_pybind_init(nearmiss_emu::Module& m)
#define TORCH_LIBRARY(ns, m) static void nm_torch_library_##ns(nearmiss_emu::Module& m)
#define TORCH_LIBRARY_IMPL(ns, k, m) static void nm_torch_library_impl_##ns(nearmiss_emu::Module& m)

// the Python side's entry: call a bound function on tensors/scalars, keep the result for nm_result
struct NmArg { void* data; int32_t ndim; int32_t dtype; int64_t sizes[8]; double scalar; int32_t is_tensor; };
struct NmOut { void* data; int32_t ndim; int32_t dtype; int64_t sizes[8]; int32_t nlaunch; };
inline at::Tensor& nm_last() { static at::Tensor t; return t; }
extern "C" int nm_call(const char* name, int n, const NmArg* a, NmOut* out, char* err, int errlen) {
  try {
    auto& fns = nearmiss_emu::module().fns;
    auto f = fns.find(name);
    if (f == fns.end()) { std::snprintf(err, errlen, "no_binding\nno function %s in PYBIND11_MODULE", name); return 1; }
    std::vector<nearmiss_emu::Arg> args(n);
    for (int i = 0; i < n; i++) {
      args[i].is_tensor = a[i].is_tensor; args[i].d = a[i].scalar;
      if (a[i].is_tensor) { args[i].t.ptr = (uint8_t*)a[i].data; args[i].t.dt = (at::ScalarType)a[i].dtype;
                            args[i].t.sz.assign(a[i].sizes, a[i].sizes + a[i].ndim); }
    }
    nearmiss_emu::launches().clear();
    nm_last() = f->second(args);
    out->data = nm_last().ptr; out->ndim = (int32_t)nm_last().sz.size(); out->dtype = (int32_t)nm_last().dt;
    for (int i = 0; i < out->ndim && i < 8; i++) out->sizes[i] = nm_last().sz[i];
    out->nlaunch = (int32_t)nearmiss_emu::launches().size();
    return 0;
  } catch (nearmiss_emu::Violation& v) {
    std::snprintf(err, errlen, "%s\n%s", v.kind.c_str(), v.message.c_str()); return 1;
  } catch (std::exception& e) {
    std::snprintf(err, errlen, "exception\n%s", e.what()); return 2;
  }
}
extern "C" const char* nm_launch_name(int i) { return nearmiss_emu::launches()[i].first.c_str(); }
extern "C" uint32_t nm_launch_blocks(int i) { return nearmiss_emu::launches()[i].second; }
