//===- ModelAbi.cpp - the C ABI of a compiled model ------------------------===//
//
// The manifest and the exported C functions of runtime/include/attnrt/
// model_abi.h, added to a module already lowered to the LLVM dialect.
//
//===----------------------------------------------------------------------===//

#include "attn/Compiler/ModelBuilder.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

std::string mlir::attn::buildManifestJson(const ModelConfig &config,
                                          int64_t maxSeq) {
  llvm::json::Array weights;
  for (const WeightSpec &weight : modelWeights(config)) {
    llvm::json::Array shape;
    for (int64_t dim : weight.shape)
      shape.push_back(dim);
    weights.push_back(llvm::json::Object{
        {"name", weight.name}, {"dtype", "F32"}, {"shape", std::move(shape)}});
  }
  llvm::json::Array prefixes, ignored;
  for (const std::string &prefix : weightNamePrefixes(config))
    prefixes.push_back(prefix);
  for (const std::string &suffix : ignoredTensorSuffixes(config))
    ignored.push_back(suffix);
  llvm::json::Object manifest{
      {"abi_version", 1},
      {"architecture", config.familyName()},
      {"vocab_size", config.vocabSize},
      {"hidden_size", config.hiddenSize},
      {"num_layers", config.numLayers},
      {"num_heads", config.numHeads},
      {"num_kv_heads", config.numKvHeads},
      {"head_dim", config.headDim},
      {"intermediate_size", config.intermediateSize},
      {"max_seq", maxSeq},
      {"kv_cache", llvm::json::Object{{"bytes", kvCacheBytes(config, maxSeq)}}},
      {"weights", std::move(weights)},
      {"name_prefixes", std::move(prefixes)},
      {"ignored_suffixes", std::move(ignored)},
  };
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(manifest));
  return text;
}

namespace {

/// Appends the expanded memref descriptor of a row-major buffer at `data`
/// with `sizes` (a Value each, static or run-time) to `args`: the allocated
/// and aligned pointers, the offset, the sizes and the strides, which is how
/// convert-func-to-llvm passes a memref argument.
void appendDescriptor(OpBuilder &b, Location loc, Value data,
                      ArrayRef<Value> sizes, ArrayRef<int64_t> staticSizes,
                      SmallVectorImpl<Value> &args) {
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t value) -> Value {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(value));
  };
  args.append({data, data, constant(0)});
  args.append(sizes.begin(), sizes.end());
  // Strides of a row-major buffer: only the leading size may be dynamic.
  SmallVector<Value> strides(sizes.size());
  int64_t stride = 1;
  for (int64_t dim = static_cast<int64_t>(sizes.size()) - 1; dim >= 0; --dim) {
    strides[dim] = constant(stride);
    stride *= staticSizes[dim];
  }
  args.append(strides.begin(), strides.end());
}

/// Appends descriptors for `weights[i]`, loaded from the pointer table, and
/// for each layer's K and V slice of the one KV cache buffer.
void appendWeightsAndCaches(OpBuilder &b, Location loc,
                            const ModelConfig &config, int64_t maxSeq,
                            Value weightTable, Value kvCache,
                            SmallVectorImpl<Value> &args) {
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t value) -> Value {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(value));
  };
  for (auto [index, weight] : llvm::enumerate(modelWeights(config))) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, weightTable,
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
    Value data = LLVM::LoadOp::create(b, loc, ptr, slot);
    SmallVector<Value> sizes;
    for (int64_t dim : weight.shape)
      sizes.push_back(constant(dim));
    appendDescriptor(b, loc, data, sizes, weight.shape, args);
  }
  int64_t features = config.kvFeatures();
  for (int64_t cache = 0; cache < 2 * config.numLayers; ++cache) {
    Value data = LLVM::GEPOp::create(b, loc, ptr, b.getF32Type(), kvCache,
                                     ValueRange{constant(cache * maxSeq * features)});
    appendDescriptor(b, loc, data, {constant(maxSeq), constant(features)},
                     {maxSeq, features}, args);
  }
}

} // namespace

LogicalResult mlir::attn::addModelCAbi(ModuleOp module,
                                       const ModelConfig &config,
                                       int64_t maxSeq) {
  MLIRContext *ctx = module.getContext();
  auto prefillImpl = module.lookupSymbol<LLVM::LLVMFuncOp>(kPrefillImpl);
  auto decodeImpl = module.lookupSymbol<LLVM::LLVMFuncOp>(kDecodeImpl);
  if (!prefillImpl || !decodeImpl)
    return module.emitError("the lowered module lacks the model entry points");

  OpBuilder b(ctx);
  Location loc = module.getLoc();
  b.setInsertionPointToEnd(module.getBody());
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  auto constant = [&](int64_t value) -> Value {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(value));
  };

  // const char *attn_model_manifest(void)
  std::string manifest = buildManifestJson(config, maxSeq);
  manifest.push_back('\0');
  auto text = LLVM::GlobalOp::create(
      b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), manifest.size()),
      /*isConstant=*/true, LLVM::Linkage::Internal, "attn_manifest_json",
      b.getStringAttr(manifest));
  auto manifestFn = LLVM::LLVMFuncOp::create(
      b, loc, "attn_model_manifest", LLVM::LLVMFunctionType::get(ptr, {}));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(manifestFn.addEntryBlock(b));
    Value address = LLVM::AddressOfOp::create(b, loc, text);
    LLVM::ReturnOp::create(b, loc, address);
  }

  // int32_t attn_model_prefill(const int32_t *tokens, int64_t n, int64_t pos,
  //     const float *const *weights, float *kv_cache, float *logits,
  //     int32_t all_logits)
  auto prefill = LLVM::LLVMFuncOp::create(
      b, loc, "attn_model_prefill",
      LLVM::LLVMFunctionType::get(i32, {ptr, i64, i64, ptr, ptr, ptr, i32}));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(prefill.addEntryBlock(b));
    auto args = prefill.getArguments();
    Value n = args[1];
    Value all = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, args[6],
                                     LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0)));
    Value rows = LLVM::SelectOp::create(b, loc, all, n, constant(1));
    SmallVector<Value> operands;
    appendDescriptor(b, loc, args[0], {n}, {ShapedType::kDynamic}, operands);
    operands.push_back(args[2]);
    appendWeightsAndCaches(b, loc, config, maxSeq, args[3], args[4], operands);
    appendDescriptor(b, loc, args[5], {rows, constant(config.vocabSize)},
                     {ShapedType::kDynamic, config.vocabSize}, operands);
    auto call = LLVM::CallOp::create(b, loc, prefillImpl, operands);
    LLVM::ReturnOp::create(b, loc, call.getResult());
  }

  // int32_t attn_model_decode(int32_t token, int64_t pos,
  //     const float *const *weights, float *kv_cache, float *logits)
  auto decode = LLVM::LLVMFuncOp::create(
      b, loc, "attn_model_decode",
      LLVM::LLVMFunctionType::get(i32, {i32, i64, ptr, ptr, ptr}));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(decode.addEntryBlock(b));
    auto args = decode.getArguments();
    Value tokenSlot = LLVM::AllocaOp::create(b, loc, ptr, i32, constant(1), 4);
    LLVM::StoreOp::create(b, loc, args[0], tokenSlot);
    SmallVector<Value> operands;
    appendDescriptor(b, loc, tokenSlot, {constant(1)}, {1}, operands);
    operands.push_back(args[1]);
    appendWeightsAndCaches(b, loc, config, maxSeq, args[2], args[3], operands);
    appendDescriptor(b, loc, args[4], {constant(1), constant(config.vocabSize)},
                     {1, config.vocabSize}, operands);
    auto call = LLVM::CallOp::create(b, loc, decodeImpl, operands);
    LLVM::ReturnOp::create(b, loc, call.getResult());
  }

  // Only the C ABI is exported; everything else the pipeline produced
  // (entry points, layer functions, helpers) stays internal.
  for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
    if (func.isExternal() || func == manifestFn || func == prefill ||
        func == decode)
      continue;
    func.setLinkage(LLVM::Linkage::Internal);
  }
  return success();
}
