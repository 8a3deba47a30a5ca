//===- ModelAbi.cpp - the C ABI of a compiled model ------------------------===//
//
// The manifest and the exported C functions of runtime/include/attnrt/
// model_abi.h, added to a module already lowered to the LLVM dialect: each
// turns the runtime's raw pointers into the memref descriptors of a lowered
// function (allocated and aligned pointer, offset, sizes, strides).
//
//===----------------------------------------------------------------------===//

#include "attn/Compiler/ModelBuilder.h"

#include "attn/Compiler/ModelLayout.h"
#include "attn/Conversion/AttnToLinalg/AttnToLinalg.h"
#include "attn/Support/Version.h"
#include "attnrt/model_abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::attn;

std::string mlir::attn::buildManifestJson(const ModelConfig &config,
                                          const ModelBuildOptions &options) {
  ModelLayout layout = planModelLayout(config, options.blockSize, options.weightFormat,
                                       options.tensorParallel, options.headFormat);
  llvm::json::Array weights;
  for (auto [index, weight] : llvm::enumerate(layout.weights)) {
    llvm::json::Array shape;
    for (int64_t dim : weight.shape)
      shape.push_back(dim);
    llvm::json::Object entry{
        {"name", weight.name}, {"dtype", "F32"}, {"shape", std::move(shape)}};
    if (!layout.usedAtRunTime[index])
      entry["used_at_run_time"] = false;
    if (const WeightSpec::Slice &slice = weight.orSliceOf; !slice.name.empty()) {
      llvm::json::Array sliceShape;
      for (int64_t dim : slice.shape)
        sliceShape.push_back(dim);
      entry["or_slice_of"] = llvm::json::Object{{"name", slice.name},
                                                {"shape", std::move(sliceShape)},
                                                {"offset", slice.offset}};
    }
    weights.push_back(std::move(entry));
  }
  llvm::json::Array packed;
  for (const PackedWeight &weight : layout.packed) {
    llvm::json::Array sources;
    for (const PackedWeight::Source &source : weight.sources)
      sources.push_back(source.weight);
    packed.push_back(llvm::json::Object{{"name", weight.name},
                                        {"bytes", weight.bytes()},
                                        {"sources", std::move(sources)}});
  }
  llvm::json::Array prefixes, ignored, ignoredPrefixes;
  for (const std::string &prefix : weightNamePrefixes(config))
    prefixes.push_back(prefix);
  for (const std::string &suffix : ignoredTensorSuffixes(config))
    ignored.push_back(suffix);
  for (const std::string &prefix : config.names.ignoredPrefixes)
    ignoredPrefixes.push_back(prefix);
  llvm::json::Object manifest{
      {"abi_version", ATTN_MODEL_ABI_VERSION},
      {"attn_version", attnVersion()},
      {"architecture", config.familyName()},
      {"vocab_size", config.vocabSize},
      {"hidden_size", config.hiddenSize},
      {"num_layers", config.numLayers},
      {"num_heads", config.numHeads},
      {"num_kv_heads", config.numKvHeads},
      {"head_dim", config.headDim},
      {"intermediate_size", config.intermediateSize},
      {"max_seq", options.maxSeq},
      {"weight_format", weightFormatName(options.weightFormat)},
      {"kv_cache",
       llvm::json::Object{
           {"bytes", kvCacheBytes(rankLocalConfig(config, options.tensorParallel),
                                  options.maxSeq, options.kvFormat)},
           {"format", kvFormatName(options.kvFormat)}}},
      {"weights", std::move(weights)},
      {"packed", std::move(packed)},
      {"name_prefixes", std::move(prefixes)},
      {"ignored_suffixes", std::move(ignored)},
  };
  if (!ignoredPrefixes.empty())
    manifest["ignored_prefixes"] = std::move(ignoredPrefixes);
  if (*attnGitCommit())
    manifest["attn_git_commit"] = attnGitCommit();
  if (options.inspect)
    manifest["inspect"] = true;
  if (config.moe.numExperts > 0) {
    manifest["num_experts"] = config.moe.numExperts;
    manifest["experts_per_token"] = config.moe.topK;
  }
  if (options.tensorParallel > 1)
    manifest["tensor_parallel"] = options.tensorParallel;
  if (options.amxTiles)
    manifest["amx_tiles"] = true;
  if (!options.targetCpu.empty()) {
    llvm::json::Array features;
    for (const std::string &feature : options.targetFeatures)
      features.push_back(feature);
    manifest["target"] = llvm::json::Object{{"cpu", options.targetCpu},
                                            {"features", std::move(features)}};
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(manifest));
  return text;
}

namespace {

/// Builds the bodies of the exported functions.
class AbiBuilder {
public:
  AbiBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value i64(int64_t value) {
    return LLVM::ConstantOp::create(b, loc, b.getI64Type(),
                                    b.getI64IntegerAttr(value));
  }

  /// Appends the expanded descriptor of a row-major buffer at `data`:
  /// `sizes` as values, `staticSizes` the same where known (kDynamic
  /// elsewhere), so that the strides are constants where they can be.
  void descriptor(Value data, ArrayRef<Value> sizes,
                  ArrayRef<int64_t> staticSizes, SmallVectorImpl<Value> &args) {
    args.append({data, data, i64(0)});
    args.append(sizes.begin(), sizes.end());
    SmallVector<Value> strides(sizes.size());
    int64_t stride = 1;
    Value dynamicStride; // The product of the dynamic sizes so far.
    for (int64_t dim = static_cast<int64_t>(sizes.size()) - 1; dim >= 0; --dim) {
      strides[dim] = dynamicStride
                         ? LLVM::MulOp::create(b, loc, dynamicStride, i64(stride)).getResult()
                         : i64(stride);
      if (dim == 0)
        break;
      if (ShapedType::isDynamic(staticSizes[dim]))
        dynamicStride = dynamicStride ? LLVM::MulOp::create(b, loc, dynamicStride, sizes[dim])
                                            .getResult()
                                      : sizes[dim];
      else
        stride *= staticSizes[dim];
    }
    args.append(strides.begin(), strides.end());
  }

  /// The descriptor of table[entry], a static shape.
  void tableEntry(Value table, int64_t entry, ArrayRef<int64_t> shape,
                  SmallVectorImpl<Value> &args) {
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, table,
                                     ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(entry)});
    Value data = LLVM::LoadOp::create(b, loc, ptr, slot);
    SmallVector<Value> sizes;
    for (int64_t dim : shape)
      sizes.push_back(i64(dim));
    descriptor(data, sizes, shape, args);
  }

  /// The table entries the entry points read, then each layer's K and V
  /// slice of the one KV cache buffer.
  void weightsAndCaches(const ModelConfig &config, const ModelLayout &layout,
                        int64_t maxSeq, KvFormat kvFormat, Value table,
                        Value kvCache, SmallVectorImpl<Value> &args) {
    for (int64_t entry = 0; entry < layout.tableSize(); ++entry)
      if (layout.readAtRunTime(entry))
        tableEntry(table, entry, layout.shape(entry), args);
    Type ptr = LLVM::LLVMPointerType::get(b.getContext());
    int64_t features = config.kvFeatures();
    // Layer-major, K then V; a sliding-window layer's caches are its ring.
    int64_t offset = 0;
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      int64_t rows = kvCacheRows(config, layer, maxSeq);
      for (int kv = 0; kv < 2; ++kv) {
        // Offsets count elements of the cache's type.
        Value data = LLVM::GEPOp::create(b, loc, ptr,
                                         kvElementType(b.getContext(), kvFormat), kvCache,
                                         ValueRange{i64(offset)});
        descriptor(data, {i64(rows), i64(features)}, {rows, features}, args);
        offset += rows * features;
      }
    }
  }

  OpBuilder &b;
  Location loc;
};

} // namespace

LogicalResult mlir::attn::addModelCAbi(ModuleOp module,
                                       const ModelConfig &config,
                                       const ModelBuildOptions &options) {
  MLIRContext *ctx = module.getContext();
  auto prefillImpl = module.lookupSymbol<LLVM::LLVMFuncOp>(kPrefillImpl);
  auto decodeImpl = module.lookupSymbol<LLVM::LLVMFuncOp>(kDecodeImpl);
  auto decodeBatchImpl = module.lookupSymbol<LLVM::LLVMFuncOp>(kDecodeBatchImpl);
  if (!prefillImpl || !decodeImpl || !decodeBatchImpl)
    return module.emitError("the lowered module lacks the model entry points");
  ModelLayout layout = planModelLayout(config, options.blockSize, options.weightFormat,
                                       options.tensorParallel, options.headFormat);
  std::vector<int64_t> kinds = packKinds(layout);
  SmallVector<LLVM::LLVMFuncOp> packImpls;
  for (int64_t kind : kinds) {
    if (kind < static_cast<int64_t>(packImpls.size()))
      continue;
    auto impl = module.lookupSymbol<LLVM::LLVMFuncOp>(
        (kPackImpl + "_" + llvm::Twine(kind)).str());
    if (!impl)
      return module.emitError("the lowered module lacks pack function ")
             << kind;
    packImpls.push_back(impl);
  }
  int64_t maxSeq = options.maxSeq;
  // The KV cache holds this rank's heads when the model is split.
  const ModelConfig local = rankLocalConfig(config, options.tensorParallel);

  OpBuilder b(ctx);
  Location loc = module.getLoc();
  b.setInsertionPointToEnd(module.getBody());
  AbiBuilder abi(b, loc);
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type(), i32 = b.getI32Type();
  Type voidType = LLVM::LLVMVoidType::get(ctx);
  auto exported = [&](StringRef name, Type result, ArrayRef<Type> params) {
    auto func = LLVM::LLVMFuncOp::create(
        b, loc, name, LLVM::LLVMFunctionType::get(result, params));
    b.setInsertionPointToStart(func.addEntryBlock(b));
    return func;
  };
  SmallVector<LLVM::LLVMFuncOp> exports;

  // const char *attn_model_manifest(void)
  std::string manifest = buildManifestJson(config, options);
  manifest.push_back('\0');
  auto text = LLVM::GlobalOp::create(
      b, loc, LLVM::LLVMArrayType::get(b.getI8Type(), manifest.size()),
      /*isConstant=*/true, LLVM::Linkage::Internal, "attn_manifest_json",
      b.getStringAttr(manifest));
  {
    OpBuilder::InsertionGuard guard(b);
    exports.push_back(exported("attn_model_manifest", ptr, {}));
    LLVM::ReturnOp::create(b, loc, LLVM::AddressOfOp::create(b, loc, text));
  }

  // int32_t attn_model_pack(float *const *table, int32_t index): fills
  // packed buffer `index`, so the runtime can release each buffer's sources
  // as soon as it is packed.
  {
    OpBuilder::InsertionGuard guard(b);
    auto pack = exported("attn_model_pack", i32, {ptr, i32});
    exports.push_back(pack);
    Value table = pack.getArgument(0);
    Block *entry = b.getInsertionBlock();
    Region *body = entry->getParent();
    Block *bad = b.createBlock(body, body->end());
    LLVM::ReturnOp::create(
        b, loc, LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(
                                                          ATTN_MODEL_ERROR_ARGUMENT)));
    SmallVector<int32_t> cases;
    SmallVector<Block *> destinations;
    for (auto [p, packed] : llvm::enumerate(layout.packed)) {
      Block *block = b.createBlock(body, body->end());
      SmallVector<Value> operands;
      for (const PackedWeight::Source &source : packed.sources)
        abi.tableEntry(table, source.weight, layout.weights[source.weight].shape,
                       operands);
      abi.tableEntry(table, layout.weights.size() + p, packed.shape(), operands);
      LLVM::CallOp::create(b, loc, packImpls[kinds[p]], operands);
      LLVM::ReturnOp::create(
          b, loc, LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0)));
      cases.push_back(static_cast<int32_t>(p));
      destinations.push_back(block);
    }
    b.setInsertionPointToEnd(entry);
    SmallVector<ValueRange> noOperands(cases.size(), ValueRange{});
    LLVM::SwitchOp::create(b, loc, pack.getArgument(1), bad, ValueRange{},
                           ArrayRef<int32_t>(cases), destinations, noOperands);
  }

  // int32_t attn_model_prefill(const int32_t *tokens, int64_t n, int64_t pos,
  //     const float *const *table, float *kv_cache, float *logits,
  //     int32_t all_logits)
  {
    OpBuilder::InsertionGuard guard(b);
    auto prefill = exported("attn_model_prefill", i32,
                            {ptr, i64, i64, ptr, ptr, ptr, i32});
    exports.push_back(prefill);
    auto args = prefill.getArguments();
    Value n = args[1];
    Value all = LLVM::ICmpOp::create(
        b, loc, LLVM::ICmpPredicate::ne, args[6],
        LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(0)));
    Value rows = LLVM::SelectOp::create(b, loc, all, n, abi.i64(1));
    SmallVector<Value> operands;
    abi.descriptor(args[0], {n}, {ShapedType::kDynamic}, operands);
    operands.push_back(args[2]);
    abi.weightsAndCaches(local, layout, maxSeq, options.kvFormat, args[3], args[4], operands);
    abi.descriptor(args[5], {rows, abi.i64(config.vocabSize)},
                   {ShapedType::kDynamic, config.vocabSize}, operands);
    auto call = LLVM::CallOp::create(b, loc, prefillImpl, operands);
    LLVM::ReturnOp::create(b, loc, call.getResult());
  }

  // int32_t attn_model_decode(int32_t token, int64_t pos,
  //     const float *const *table, float *kv_cache, float *logits)
  {
    OpBuilder::InsertionGuard guard(b);
    auto decode = exported("attn_model_decode", i32, {i32, i64, ptr, ptr, ptr});
    exports.push_back(decode);
    auto args = decode.getArguments();
    Value tokenSlot = LLVM::AllocaOp::create(b, loc, ptr, i32, abi.i64(1), 4);
    LLVM::StoreOp::create(b, loc, args[0], tokenSlot);
    SmallVector<Value> operands;
    abi.descriptor(tokenSlot, {abi.i64(1)}, {1}, operands);
    operands.push_back(args[1]);
    abi.weightsAndCaches(local, layout, maxSeq, options.kvFormat, args[2], args[3], operands);
    abi.descriptor(args[4], {abi.i64(1), abi.i64(config.vocabSize)},
                   {1, config.vocabSize}, operands);
    auto call = LLVM::CallOp::create(b, loc, decodeImpl, operands);
    LLVM::ReturnOp::create(b, loc, call.getResult());
  }

  // int32_t attn_model_decode_batch(const int32_t *tokens,
  //     const int64_t *positions, const int64_t *slots, int64_t n,
  //     const float *const *table, float *kv_pool, int64_t pool_slots,
  //     float *logits)
  {
    OpBuilder::InsertionGuard guard(b);
    auto batch = exported("attn_model_decode_batch", i32, {ptr, ptr, ptr, i64, ptr, ptr, i64, ptr});
    exports.push_back(batch);
    auto args = batch.getArguments();
    Value n = args[3];
    const int64_t dynamic = ShapedType::kDynamic;
    int64_t cacheElements = kvCacheBytes(local, maxSeq, KvFormat::F32) / 4;
    SmallVector<Value> operands;
    for (int i = 0; i < 3; ++i)
      abi.descriptor(args[i], {n}, {dynamic}, operands);
    for (int64_t entry = 0; entry < layout.tableSize(); ++entry)
      if (layout.readAtRunTime(entry))
        abi.tableEntry(args[4], entry, layout.shape(entry), operands);
    abi.descriptor(args[5], {args[6], abi.i64(cacheElements)}, {dynamic, cacheElements},
                   operands);
    abi.descriptor(args[7], {n, abi.i64(config.vocabSize)}, {dynamic, config.vocabSize},
                   operands);
    LLVM::ReturnOp::create(b, loc,
                           LLVM::CallOp::create(b, loc, decodeBatchImpl, operands).getResult());
  }

  // int32_t attn_model_inspect(const int32_t *tokens, int64_t n,
  //     const float *const *table, float *kv_cache, float *attention,
  //     float *residual, float *final_norm, int32_t *experts,
  //     float *expert_weights, float *logits)
  //     (from position 0; logits of every token; the routing only in a
  //     mixture of experts)
  // int32_t attn_model_unembed(const float *hidden, int64_t n,
  //     const float *const *table, float *logits)
  if (options.inspect) {
    auto inspectImpl = module.lookupSymbol<LLVM::LLVMFuncOp>(kInspectImpl);
    auto unembedImpl = module.lookupSymbol<LLVM::LLVMFuncOp>(kUnembedImpl);
    if (!inspectImpl || !unembedImpl)
      return module.emitError("the lowered module lacks the inspection entry points");
    OpBuilder::InsertionGuard guard(b);
    auto inspect =
        exported("attn_model_inspect", i32, {ptr, i64, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr});
    exports.push_back(inspect);
    auto args = inspect.getArguments();
    Value n = args[1];
    int64_t layers = config.numLayers, heads = config.numHeads, d = config.hiddenSize;
    const int64_t dynamic = ShapedType::kDynamic;
    SmallVector<Value> operands;
    abi.descriptor(args[0], {n}, {dynamic}, operands);
    operands.push_back(abi.i64(0));
    abi.weightsAndCaches(local, layout, maxSeq, options.kvFormat, args[2], args[3], operands);
    abi.descriptor(args[4], {abi.i64(layers), abi.i64(heads), n, n}, {layers, heads, dynamic, dynamic},
                   operands);
    abi.descriptor(args[5], {abi.i64(layers + 1), n, abi.i64(d)}, {layers + 1, dynamic, d}, operands);
    abi.descriptor(args[6], {n, abi.i64(d)}, {dynamic, d}, operands);
    if (int64_t topK = config.moe.topK; config.moe.numExperts > 0)
      for (int arg : {7, 8})
        abi.descriptor(args[arg], {abi.i64(layers), n, abi.i64(topK)}, {layers, dynamic, topK},
                       operands);
    abi.descriptor(args[9], {n, abi.i64(config.vocabSize)}, {dynamic, config.vocabSize},
                   operands);
    LLVM::ReturnOp::create(b, loc, LLVM::CallOp::create(b, loc, inspectImpl, operands).getResult());

    b.setInsertionPointToEnd(module.getBody());
    auto unembed = exported("attn_model_unembed", i32, {ptr, i64, ptr, ptr});
    exports.push_back(unembed);
    auto uargs = unembed.getArguments();
    SmallVector<Value> unembedOperands;
    abi.descriptor(uargs[0], {uargs[1], abi.i64(d)}, {dynamic, d}, unembedOperands);
    for (int64_t entry = 0; entry < layout.tableSize(); ++entry)
      if (layout.readAtRunTime(entry))
        abi.tableEntry(uargs[2], entry, layout.shape(entry), unembedOperands);
    abi.descriptor(uargs[3], {uargs[1], abi.i64(config.vocabSize)},
                   {dynamic, config.vocabSize}, unembedOperands);
    LLVM::ReturnOp::create(
        b, loc, LLVM::CallOp::create(b, loc, unembedImpl, unembedOperands).getResult());
  }

  // void attn_model_set_num_threads(int32_t n): OpenMP's team size.
  {
    OpBuilder::InsertionGuard guard(b);
    auto ompSetNumThreads = module.lookupSymbol<LLVM::LLVMFuncOp>("omp_set_num_threads");
    if (!ompSetNumThreads)
      ompSetNumThreads = LLVM::LLVMFuncOp::create(
          b, loc, "omp_set_num_threads", LLVM::LLVMFunctionType::get(voidType, {i32}));
    auto setThreads = exported("attn_model_set_num_threads", voidType, {i32});
    exports.push_back(setThreads);
    LLVM::CallOp::create(b, loc, ompSetNumThreads, setThreads.getArguments());
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }

  // void attn_model_set_allocator(void *(*alloc)(uint64_t), void (*free)(void *))
  // The lowered code allocates its temporaries with malloc and free. Both
  // go through hooks the runtime sets (a per-session cache whose pages stay
  // touched), and to malloc and free while the hooks are unset.
  {
    OpBuilder::InsertionGuard guard(b);
    auto libc = [&](StringRef name, Type result, ArrayRef<Type> params) {
      if (auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(name))
        return func;
      return LLVM::LLVMFuncOp::create(b, loc, name,
                                      LLVM::LLVMFunctionType::get(result, params));
    };
    LLVM::LLVMFuncOp mallocFn = libc("malloc", ptr, {i64});
    LLVM::LLVMFuncOp freeFn = libc("free", voidType, {ptr});

    // @name(arg): the hook in @<name>_hook when set, else `fallback`.
    auto hooked = [&](StringRef name, LLVM::LLVMFuncOp fallback) {
      auto hook = LLVM::GlobalOp::create(b, loc, ptr, /*isConstant=*/false,
                                         LLVM::Linkage::Internal,
                                         (name + "_hook").str(), Attribute());
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(b.createBlock(&hook.getInitializerRegion()));
        LLVM::ReturnOp::create(b, loc, LLVM::ZeroOp::create(b, loc, ptr).getResult());
      }
      LLVM::LLVMFunctionType type = fallback.getFunctionType();
      auto func = LLVM::LLVMFuncOp::create(b, loc, name, type);
      OpBuilder::InsertionGuard inner(b);
      Block *entry = func.addEntryBlock(b);
      Block *viaHook = b.createBlock(&func.getBody());
      Block *viaLibc = b.createBlock(&func.getBody());
      b.setInsertionPointToStart(entry);
      Value hookFn = LLVM::LoadOp::create(b, loc, ptr,
                                          LLVM::AddressOfOp::create(b, loc, hook));
      Value unset = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, hookFn,
                                         LLVM::ZeroOp::create(b, loc, ptr));
      LLVM::CondBrOp::create(b, loc, unset, viaLibc, viaHook);
      Value arg = entry->getArgument(0);
      for (Block *block : {viaHook, viaLibc}) {
        b.setInsertionPointToStart(block);
        LLVM::CallOp call =
            block == viaHook
                ? LLVM::CallOp::create(b, loc, type, ValueRange{hookFn, arg})
                : LLVM::CallOp::create(b, loc, fallback, arg);
        if (isa<LLVM::LLVMVoidType>(type.getReturnType()))
          LLVM::ReturnOp::create(b, loc, ValueRange{});
        else
          LLVM::ReturnOp::create(b, loc, call.getResult());
      }
      return std::make_pair(func, hook);
    };
    auto [scratchAlloc, allocHook] = hooked("attn_scratch_alloc", mallocFn);
    auto [scratchFree, freeHook] = hooked("attn_scratch_free", freeFn);
    // Every other call of malloc and free now goes through them.
    for (auto [from, to] : {std::pair{mallocFn, scratchAlloc}, {freeFn, scratchFree}})
      for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
        if (func == scratchAlloc || func == scratchFree)
          continue;
        if (failed(SymbolTable::replaceAllSymbolUses(from, to.getSymNameAttr(), func)))
          return module.emitError("cannot redirect ") << from.getSymName();
      }

    auto setAllocator = exported("attn_model_set_allocator", voidType, {ptr, ptr});
    exports.push_back(setAllocator);
    LLVM::StoreOp::create(b, loc, setAllocator.getArgument(0),
                          LLVM::AddressOfOp::create(b, loc, allocHook));
    LLVM::StoreOp::create(b, loc, setAllocator.getArgument(1),
                          LLVM::AddressOfOp::create(b, loc, freeHook));
    LLVM::ReturnOp::create(b, loc, ValueRange{});
  }

  // void attn_model_set_collectives(const attn_model_collectives *c), and
  // the functions the tensor-parallel ops were lowered to calling, defined
  // over its hooks (a library of one rank declares none of them).
  auto allReduce = module.lookupSymbol<LLVM::LLVMFuncOp>(kAllReduceFunction);
  auto allGather = module.lookupSymbol<LLVM::LLVMFuncOp>(kAllGatherFunction);
  auto groupRank = module.lookupSymbol<LLVM::LLVMFuncOp>(kGroupRankFunction);
  if (options.tensorParallel > 1) {
    OpBuilder::InsertionGuard guard(b);
    auto collectives = LLVM::GlobalOp::create(b, loc, ptr, /*isConstant=*/false,
                                              LLVM::Linkage::Internal,
                                              "attn_collectives", Attribute());
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(b.createBlock(&collectives.getInitializerRegion()));
      LLVM::ReturnOp::create(b, loc, LLVM::ZeroOp::create(b, loc, ptr).getResult());
    }
    auto setCollectives = exported("attn_model_set_collectives", voidType, {ptr});
    exports.push_back(setCollectives);
    LLVM::StoreOp::create(b, loc, setCollectives.getArgument(0),
                          LLVM::AddressOfOp::create(b, loc, collectives));
    LLVM::ReturnOp::create(b, loc, ValueRange{});

    // attn_model_collectives: {rank, size, context, all_reduce_sum, all_gather}.
    auto hooks = LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, ptr, ptr, ptr});
    auto field = [&](Value c, int32_t index, Type type) -> Value {
      Value at = LLVM::GEPOp::create(b, loc, ptr, hooks, c,
                                     ArrayRef<LLVM::GEPArg>{0, index});
      return LLVM::LoadOp::create(b, loc, type, at);
    };
    auto define = [&](LLVM::LLVMFuncOp func) {
      b.setInsertionPointToStart(func.addEntryBlock(b));
      return LLVM::LoadOp::create(b, loc, ptr,
                                  LLVM::AddressOfOp::create(b, loc, collectives))
          .getResult();
    };
    // A lowered memref<?xf32> argument (allocated, aligned, offset, size,
    // stride) from argument `first`: its first element and its size.
    auto data = [&](LLVM::LLVMFuncOp func, unsigned first) {
      Value base = func.getArgument(first + 1);
      Value at = LLVM::GEPOp::create(b, loc, ptr, b.getF32Type(), base,
                                     ValueRange{func.getArgument(first + 2)});
      return std::make_pair(at, func.getArgument(first + 3));
    };
    if (allReduce) {
      Value c = define(allReduce);
      auto [at, n] = data(allReduce, 0);
      auto type = LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64});
      LLVM::CallOp::create(b, loc, type,
                           ValueRange{field(c, 3, ptr), field(c, 2, ptr), at, n});
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
    if (allGather) {
      Value c = define(allGather);
      auto [in, n] = data(allGather, 0);
      Value out = data(allGather, 5).first;
      auto type = LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64, ptr});
      LLVM::CallOp::create(b, loc, type,
                           ValueRange{field(c, 4, ptr), field(c, 2, ptr), in, n, out});
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
    if (groupRank) {
      Value c = define(groupRank);
      LLVM::ReturnOp::create(b, loc, LLVM::SExtOp::create(b, loc, i64, field(c, 0, i32)).getResult());
    }
  } else if (allReduce || allGather || groupRank) {
    return module.emitError("tensor-parallel collectives in a library of one rank");
  }

  // Only the C ABI is exported; everything else the pipeline produced
  // (entry points, layer functions, helpers) stays internal.
  for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
    if (func.isExternal() || llvm::is_contained(exports, func))
      continue;
    func.setLinkage(LLVM::Linkage::Internal);
  }
  return success();
}
