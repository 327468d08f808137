// nearmiss AscendC emulator: the host side of MultiKernelBench-style operators (CANN op
// project): tiling data definitions, the tiling context, the op definition and the
// PyTorch binding, reduced to what a vector operator's TilingFunc and binding use.
// Sources: CANN 8.0 "Ascend C operator development: host-side tiling" (BEGIN_TILING_DATA_DEF,
// TILING_DATA_FIELD_DEF, REGISTER_TILING_DATA_CLASS, gert::TilingContext), "OpDef" and
// "torch_npu custom operator adaptation" (EXEC_NPU_CMD). Blocks run in turn, as in the kernel header.
#pragma once
#include "kernel_operator.h"
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>

// ------------------------------------------------------------------ tiling data
#define BEGIN_TILING_DATA_DEF(name) struct name {
#define TILING_DATA_FIELD_DEF(type, field) \
  type field = 0; void set_##field(type v) { field = v; } type get_##field() const { return field; }
#define TILING_DATA_FIELD_DEF_ARR(type, n, field) \
  type field[n] = {}; void set_##field(const type* v) { std::memcpy(field, v, sizeof(field)); }
#define END_TILING_DATA_DEF \
  void SaveToBuffer(void* p, size_t cap) const { \
    if (sizeof(*this) > cap) nearmiss_emu::fail("tiling_too_large", "tiling data larger than the tiling buffer"); \
    std::memcpy(p, this, sizeof(*this)); } \
  size_t GetDataSize() const { return sizeof(*this); } }
#define REGISTER_TILING_DATA_CLASS(op, name)
#define GET_TILING_DATA(var, tiling) NmTilingData var; std::memcpy(&var, (const void*)(tiling), sizeof(var))

namespace ge {
enum graphStatus { GRAPH_SUCCESS = 0, GRAPH_FAILED = 1 };
enum DataType { DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6, DT_INT64 = 9,
                DT_BOOL = 12, DT_BF16 = 27 };
enum Format { FORMAT_ND = 2 };
}  // namespace ge
using ge::GRAPH_SUCCESS;
using ge::GRAPH_FAILED;

namespace gert {
struct Shape {
  std::vector<int64_t> dims;
  size_t GetDimNum() const { return dims.size(); }
  int64_t GetDim(size_t i) const { return i < dims.size() ? dims[i] : 0; }
  void SetDimNum(size_t n) { dims.resize(n); }
  void SetDim(size_t i, int64_t v) { if (i >= dims.size()) dims.resize(i + 1); dims[i] = v; }
  int64_t GetShapeSize() const { int64_t n = 1; for (auto d : dims) n *= d; return n; }
};
struct StorageShape {
  Shape shape;
  const Shape& GetOriginShape() const { return shape; }
  const Shape& GetStorageShape() const { return shape; }
};
struct CompileTimeTensorDesc {
  ge::DataType dt;
  ge::DataType GetDataType() const { return dt; }
};
struct Tensor {
  StorageShape s; ge::DataType dt;
  const Shape& GetOriginShape() const { return s.shape; }
  const Shape& GetStorageShape() const { return s.shape; }
  ge::DataType GetDataType() const { return dt; }
  int64_t GetShapeSize() const { return s.shape.GetShapeSize(); }
};
struct RuntimeAttrs {
  std::vector<std::vector<uint8_t>> vals;
  template <typename T> const T* GetAttrPointer(size_t i) const {
    if (i >= vals.size()) nearmiss_emu::fail("missing_attr", "GetAttrPointer past the attributes the binding passed");
    return (const T*)vals[i].data();
  }
  const float* GetFloat(size_t i) const { return GetAttrPointer<float>(i); }
  const int64_t* GetInt(size_t i) const { return GetAttrPointer<int64_t>(i); }
};
struct TilingData {
  uint8_t buf[8192]; size_t size = 0;
  void* GetData() { return buf; }
  size_t GetCapacity() const { return sizeof(buf); }
  void SetDataSize(size_t n) { size = n; }
  size_t GetDataSize() const { return size; }
};
struct TilingContext {
  std::vector<Tensor> inputs, outputs;
  RuntimeAttrs attrs;
  TilingData tiling;
  uint32_t block_dim = 1;
  uint64_t tiling_key = 0;
  std::vector<size_t> workspace;
  const StorageShape* GetInputShape(size_t i) const { return i < inputs.size() ? &inputs[i].s : nullptr; }
  const StorageShape* GetOutputShape(size_t i) const { return i < outputs.size() ? &outputs[i].s : nullptr; }
  const Tensor* GetInputTensor(size_t i) const { return i < inputs.size() ? &inputs[i] : nullptr; }
  const CompileTimeTensorDesc* GetInputDesc(size_t i) const {
    static thread_local CompileTimeTensorDesc d; d.dt = i < inputs.size() ? inputs[i].dt : ge::DT_FLOAT; return &d; }
  const RuntimeAttrs* GetAttrs() const { return &attrs; }
  TilingData* GetRawTilingData() { return &tiling; }
  void SetBlockDim(uint32_t n) { block_dim = n; }
  uint32_t GetBlockDim() const { return block_dim; }
  void SetTilingKey(uint64_t k) { tiling_key = k; }
  size_t* GetWorkspaceSizes(size_t n) { workspace.assign(n, 0); return workspace.data(); }
  const void* GetPlatformInfo() const { return nullptr; }
};
struct InferShapeContext {
  std::vector<Shape> in, out;
  const Shape* GetInputShape(size_t i) const { return &in[i]; }
  Shape* GetOutputShape(size_t i) { return &out[i]; }
};
struct InferDataTypeContext {
  ge::DataType GetInputDataType(size_t) const { return ge::DT_FLOAT; }
  void SetOutputDataType(size_t, ge::DataType) {}
};
}  // namespace gert

namespace platform_ascendc {
enum class CoreMemType { UB, L1, L0_A, L0_B, L0_C };
struct PlatformAscendC {  // an Atlas A2 (910B) vector core set: 48 AIV cores, 192 KB UB [HW]
  explicit PlatformAscendC(const void*) {}
  uint32_t GetCoreNum() const { return 48; }
  uint32_t GetCoreNumAiv() const { return 48; }
  uint32_t GetCoreNumAic() const { return 24; }
  void GetCoreMemSize(CoreMemType t, uint64_t& size) const { size = t == CoreMemType::UB ? nearmiss_emu::UB_BYTES : 0; }
};
}  // namespace platform_ascendc

// ------------------------------------------------------------------ op definition (recorded, not checked)
namespace nearmiss_emu {
using TilingFn = ge::graphStatus (*)(gert::TilingContext*);
inline std::map<std::string, TilingFn>& tiling_fns() { static std::map<std::string, TilingFn> m; return m; }
inline std::string& current_op() { static std::string s; return s; }
// kernels by name and the input count of each op (from project_json_src), filled by the generated code
using KernelBody = void (*)(void**);
inline std::map<std::string, KernelBody>& kernels() { static std::map<std::string, KernelBody> m; return m; }
inline std::map<std::string, int>& op_inputs() { static std::map<std::string, int> m; return m; }

}  // namespace nearmiss_emu
namespace ops {
enum ParamType { REQUIRED, OPTIONAL, DYNAMIC };
struct OpParamDef {
  template <typename... A> OpParamDef& ParamType(A...) { return *this; }
  template <typename T> OpParamDef& DataType(std::initializer_list<T>) { return *this; }
  template <typename T> OpParamDef& Format(std::initializer_list<T>) { return *this; }
  template <typename T> OpParamDef& UnknownShapeFormat(std::initializer_list<T>) { return *this; }
  template <typename... A> OpParamDef& AutoContiguous(A...) { return *this; }
};
struct OpAttrDef {
  template <typename... A> OpAttrDef& AttrType(A...) { return *this; }
  template <typename... A> OpAttrDef& Float(A...) { return *this; }
  template <typename... A> OpAttrDef& Int(A...) { return *this; }
  template <typename... A> OpAttrDef& Bool(A...) { return *this; }
  template <typename... A> OpAttrDef& String(A...) { return *this; }
  template <typename... A> OpAttrDef& ListInt(A...) { return *this; }
};
struct OpAICoreConfig {};
struct OpAICoreDef {
  std::string op;
  OpAICoreDef& SetTiling(nearmiss_emu::TilingFn f) { nearmiss_emu::tiling_fns()[op] = f; return *this; }
  template <typename... A> OpAICoreDef& AddConfig(A...) { return *this; }
  template <typename... A> OpAICoreDef& SetCheckSupport(A...) { return *this; }
};
class OpDef {
 public:
  explicit OpDef(const char* name) { core.op = name; }
  OpParamDef& Input(const char*) { return p; }
  OpParamDef& Output(const char*) { return p; }
  OpAttrDef& Attr(const char*) { return a; }
  template <typename F> OpDef& SetInferShape(F) { return *this; }
  template <typename F> OpDef& SetInferDataType(F) { return *this; }
  OpAICoreDef& AICore() { return core; }
 private:
  OpParamDef p; OpAttrDef a; OpAICoreDef core;
};
}  // namespace ops
#define OP_ADD(name) static name nm_opdef_##name(#name)
