//===- Gguf.cpp - read-only GGUF file -------------------------------------===//

#include "Gguf.h"

#include "Support.h"

#include <algorithm>
#include <cstring>

namespace attnrt {

namespace {

const char *scalarName(GgufType type) {
  switch (type) {
  case GgufType::U8:
    return "u8";
  case GgufType::I8:
    return "i8";
  case GgufType::U16:
    return "u16";
  case GgufType::I16:
    return "i16";
  case GgufType::U32:
    return "u32";
  case GgufType::I32:
    return "i32";
  case GgufType::F32:
    return "f32";
  case GgufType::Bool:
    return "bool";
  case GgufType::String:
    return "string";
  case GgufType::Array:
    return "array";
  case GgufType::U64:
    return "u64";
  case GgufType::I64:
    return "i64";
  case GgufType::F64:
    return "f64";
  }
  return "?";
}

/// Bytes of one value of a fixed-size type; 0 for strings and arrays.
uint64_t fixedSize(GgufType type) {
  switch (type) {
  case GgufType::U8:
  case GgufType::I8:
  case GgufType::Bool:
    return 1;
  case GgufType::U16:
  case GgufType::I16:
    return 2;
  case GgufType::U32:
  case GgufType::I32:
  case GgufType::F32:
    return 4;
  case GgufType::U64:
  case GgufType::I64:
  case GgufType::F64:
    return 8;
  case GgufType::String:
  case GgufType::Array:
    return 0;
  }
  return 0;
}

bool isInteger(GgufType type) {
  switch (type) {
  case GgufType::U8:
  case GgufType::I8:
  case GgufType::U16:
  case GgufType::I16:
  case GgufType::U32:
  case GgufType::I32:
  case GgufType::U64:
  case GgufType::I64:
    return true;
  default:
    return false;
  }
}

bool isSigned(GgufType type) {
  return type == GgufType::I8 || type == GgufType::I16 ||
         type == GgufType::I32 || type == GgufType::I64;
}

template <typename T> T load(const uint8_t *p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

/// An integer value at `p` of integer type `type`, as a sign flag and
/// magnitude-preserving pair: `negative` set when a signed value is below 0.
void loadInteger(GgufType type, const uint8_t *p, uint64_t &bits,
                 bool &negative) {
  int64_t s = 0;
  negative = false;
  switch (type) {
  case GgufType::U8:
    bits = p[0];
    return;
  case GgufType::U16:
    bits = load<uint16_t>(p);
    return;
  case GgufType::U32:
    bits = load<uint32_t>(p);
    return;
  case GgufType::U64:
    bits = load<uint64_t>(p);
    return;
  case GgufType::I8:
    s = load<int8_t>(p);
    break;
  case GgufType::I16:
    s = load<int16_t>(p);
    break;
  case GgufType::I32:
    s = load<int32_t>(p);
    break;
  case GgufType::I64:
    s = load<int64_t>(p);
    break;
  default:
    bits = 0;
    return;
  }
  negative = s < 0;
  bits = static_cast<uint64_t>(s);
}

/// A bounds-checked reader over the file's bytes. Every read says what it
/// was reading, so a truncated file names the field it ends in.
class Cursor {
public:
  Cursor(const uint8_t *data, size_t size) : data(data), size(size) {}

  uint64_t offset() const { return pos; }
  uint64_t remaining() const { return size - pos; }

  bool skip(uint64_t bytes, const char *what, std::string &error) {
    if (bytes > remaining()) {
      error = format("file ends inside %s (offset %llu: %llu bytes needed, "
                     "%llu left; truncated file?)",
                     what, static_cast<unsigned long long>(pos),
                     static_cast<unsigned long long>(bytes),
                     static_cast<unsigned long long>(remaining()));
      return false;
    }
    pos += bytes;
    return true;
  }
  template <typename T> bool read(T &value, const char *what,
                                  std::string &error) {
    uint64_t at = pos;
    if (!skip(sizeof(T), what, error))
      return false;
    value = load<T>(data + at);
    return true;
  }
  /// A string's bytes stay in the file: `value` points into it.
  bool readString(std::string_view &value, const char *what,
                  std::string &error) {
    uint64_t length;
    if (!read(length, what, error))
      return false;
    uint64_t at = pos;
    if (!skip(length, what, error))
      return false;
    value = std::string_view(reinterpret_cast<const char *>(data + at),
                             static_cast<size_t>(length));
    return true;
  }

private:
  const uint8_t *data;
  size_t size;
  uint64_t pos = 0;
};

bool validType(uint32_t raw) { return raw <= uint32_t(GgufType::F64); }

} // namespace

std::string ggufTypeName(GgufType type, GgufType elementType) {
  if (type == GgufType::Array)
    return std::string("array of ") + scalarName(elementType);
  return scalarName(type);
}

bool GgufFile::open(const std::string &path, std::string &error,
                    bool populate) {
  close();
  filePath = path;
  std::string message;
  if (!file.open(path, message, populate)) {
    error = where() + message;
    return false;
  }
  base = file.data();
  size = file.size();
  if (!parse(error)) {
    close();
    return false;
  }
  return true;
}

bool GgufFile::openBytes(const uint8_t *data, size_t bytes,
                         const std::string &path, std::string &error) {
  close();
  filePath = path;
  base = data;
  size = bytes;
  if (!parse(error)) {
    close();
    return false;
  }
  return true;
}

std::string GgufFile::where() const {
  return "GGUF file " + quote(filePath) + ": ";
}

void GgufFile::unmap() {
  file.reset();
  base = nullptr;
  size = 0;
}

void GgufFile::close() {
  file.reset();
  base = nullptr;
  size = 0;
  fileVersion = 0;
  dataAlignment = defaultAlignment;
  dataStart = 0;
  keysByName.clear();
  keyList.clear();
  tensorsByName.clear();
  tensorList.clear();
}

bool GgufFile::parse(std::string &error) {
  std::string message;
  auto fail = [&](const std::string &what) {
    error = where() + what;
    return false;
  };
  Cursor in(base, size);
  uint32_t magic;
  if (!in.read(magic, "the magic", message))
    return fail(format("is %zu bytes, too short for a GGUF header", size));
  if (std::memcmp(base, "GGUF", 4) != 0)
    return fail("not a GGUF file (the magic is not \"GGUF\")");
  if (!in.read(fileVersion, "the version", message))
    return fail(message);
  if (fileVersion != 2 && fileVersion != 3)
    return fail(format("GGUF version %u is not supported (versions 2 and 3 "
                       "are; version 1 files need converting with a current "
                       "llama.cpp)",
                       fileVersion));
  uint64_t tensorCount, keyCount;
  if (!in.read(tensorCount, "the tensor count", message) ||
      !in.read(keyCount, "the metadata count", message))
    return fail(message);
  // Real files hold tens of keys and at most a few thousand tensors; a
  // count past these limits is a damaged header, refused before anything is
  // allocated for it.
  if (keyCount > maxKeys)
    return fail(format("metadata count %llu is larger than the %llu accepted",
                       static_cast<unsigned long long>(keyCount),
                       static_cast<unsigned long long>(maxKeys)));
  if (tensorCount > maxTensors)
    return fail(format("tensor count %llu is larger than the %llu accepted",
                       static_cast<unsigned long long>(tensorCount),
                       static_cast<unsigned long long>(maxTensors)));

  for (uint64_t i = 0; i < keyCount; ++i) {
    std::string_view name;
    if (!in.readString(name, "a metadata key", message))
      return fail(format("metadata entry %llu: ",
                         static_cast<unsigned long long>(i)) +
                  message);
    std::string keyWhere = "metadata key " + quote(name) + ": ";
    if (name.empty())
      return fail(format("metadata entry %llu has an empty key",
                         static_cast<unsigned long long>(i)));
    GgufKeyValue kv;
    kv.name = std::string(name);
    uint32_t rawType;
    if (!in.read(rawType, "a value type", message))
      return fail(keyWhere + message);
    if (!validType(rawType))
      return fail(keyWhere + format("unknown value type %u", rawType));
    kv.type = static_cast<GgufType>(rawType);
    GgufType element = kv.type;
    uint64_t count = 1;
    if (kv.type == GgufType::Array) {
      uint32_t rawElement;
      if (!in.read(rawElement, "an array's element type", message) ||
          !in.read(count, "an array's length", message))
        return fail(keyWhere + message);
      if (!validType(rawElement))
        return fail(keyWhere + format("unknown array element type %u",
                                      rawElement));
      element = static_cast<GgufType>(rawElement);
      if (element == GgufType::Array)
        return fail(keyWhere + "arrays of arrays are not supported");
      kv.elementType = element;
      kv.count = count;
    }
    kv.offset = in.offset();
    uint64_t width = fixedSize(element);
    if (width) {
      if (count > in.remaining() / width)
        return fail(keyWhere +
                    format("%llu values of %s do not fit in the %llu bytes "
                           "left (truncated file?)",
                           static_cast<unsigned long long>(count),
                           scalarName(element),
                           static_cast<unsigned long long>(in.remaining())));
      if (element == GgufType::Bool)
        for (uint64_t j = 0; j < count; ++j)
          if (base[kv.offset + j] > 1)
            return fail(keyWhere +
                        format("bool value %u is neither 0 nor 1",
                               base[kv.offset + j]));
      in.skip(count * width, "values", message);
    } else {
      // Strings: each at least its 8-byte length.
      if (count > in.remaining() / 8)
        return fail(keyWhere +
                    format("%llu strings cannot fit in the %llu bytes left "
                           "(truncated file?)",
                           static_cast<unsigned long long>(count),
                           static_cast<unsigned long long>(in.remaining())));
      for (uint64_t j = 0; j < count; ++j) {
        std::string_view text;
        if (!in.readString(text, "a string value", message))
          return fail(keyWhere +
                      (kv.type == GgufType::Array
                           ? format("element %llu: ",
                                    static_cast<unsigned long long>(j))
                           : std::string()) +
                      message);
      }
    }
    keyList.push_back(std::move(kv));
  }
  // Names as views into keyList, built once it no longer moves.
  for (size_t i = 0; i < keyList.size(); ++i)
    if (!keysByName.emplace(keyList[i].name, i).second)
      return fail("metadata key " + quote(keyList[i].name) +
                  " appears twice");

  if (const GgufKeyValue *kv = findKey("general.alignment")) {
    if (kv->type != GgufType::U32) {
      error = keyError(*kv, "u32");
      return false;
    }
    uint32_t alignment = load<uint32_t>(base + kv->offset);
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
      return fail(format("metadata key 'general.alignment': %u is not a "
                         "power of two",
                         alignment));
    dataAlignment = alignment;
  }

  for (uint64_t i = 0; i < tensorCount; ++i) {
    std::string_view name;
    if (!in.readString(name, "a tensor name", message))
      return fail(format("tensor info %llu: ",
                         static_cast<unsigned long long>(i)) +
                  message);
    if (name.empty())
      return fail(format("tensor info %llu has an empty name",
                         static_cast<unsigned long long>(i)));
    std::string tensorWhere = "tensor " + quote(name) + ": ";
    if (name.size() >= maxTensorName)
      return fail(tensorWhere +
                  format("name is %zu bytes, longer than ggml's limit of %zu",
                         name.size(), maxTensorName - 1));
    GgufTensorInfo tensor;
    tensor.name = std::string(name);
    uint32_t numDims;
    if (!in.read(numDims, "a dimension count", message))
      return fail(tensorWhere + message);
    if (numDims == 0 || numDims > maxDims)
      return fail(tensorWhere +
                  format("%u dimensions (1 to %u are allowed)", numDims,
                         maxDims));
    tensor.elements = 1;
    for (uint32_t d = 0; d < numDims; ++d) {
      uint64_t dim;
      if (!in.read(dim, "a dimension", message))
        return fail(tensorWhere + message);
      if (dim > uint64_t(INT64_MAX) ||
          __builtin_mul_overflow(tensor.elements, static_cast<int64_t>(dim),
                                 &tensor.elements))
        return fail(tensorWhere +
                    format("dimension %u (%llu) overflows the element count",
                           d, static_cast<unsigned long long>(dim)));
      tensor.dims.push_back(static_cast<int64_t>(dim));
    }
    uint32_t rawType;
    uint64_t offset;
    if (!in.read(rawType, "a tensor type", message) ||
        !in.read(offset, "a tensor offset", message))
      return fail(tensorWhere + message);
    const GgmlTypeTraits *traits = ggmlTypeTraits(rawType);
    if (!traits)
      return fail(tensorWhere + format("unknown ggml type %u", rawType));
    tensor.type = traits->type;
    if (tensor.dims[0] % traits->blockSize != 0)
      return fail(tensorWhere +
                  format("rows of %lld elements are not whole %s blocks of "
                         "%u",
                         static_cast<long long>(tensor.dims[0]), traits->name,
                         traits->blockSize));
    // Bytes can overflow where elements do not: an f64 is 8 bytes.
    uint64_t blocks = uint64_t(tensor.elements) / traits->blockSize;
    uint64_t bytes;
    if (__builtin_mul_overflow(blocks, uint64_t(traits->typeSize), &bytes))
      return fail(tensorWhere + "byte size overflows");
    if (offset % dataAlignment != 0)
      return fail(tensorWhere +
                  format("data offset %llu is not a multiple of the "
                         "alignment %llu",
                         static_cast<unsigned long long>(offset),
                         static_cast<unsigned long long>(dataAlignment)));
    tensor.begin = offset;
    if (__builtin_add_overflow(offset, bytes, &tensor.end))
      return fail(tensorWhere + "data range overflows");
    tensorList.push_back(std::move(tensor));
  }
  for (size_t i = 0; i < tensorList.size(); ++i)
    if (!tensorsByName.emplace(tensorList[i].name, i).second)
      return fail("tensor " + quote(tensorList[i].name) + " appears twice");

  // The data region starts at the next multiple of the alignment. A file
  // with no tensors may end before it.
  uint64_t infoEnd = in.offset();
  uint64_t padded = (infoEnd + dataAlignment - 1) / dataAlignment *
                    dataAlignment;
  if (padded < infoEnd) // Only with an alignment near 2^32 and a huge file.
    return fail("data offset overflows");
  if (tensorList.empty()) {
    dataStart = std::min<uint64_t>(padded, size);
    return true;
  }
  if (padded > size)
    return fail(format("file ends (at %zu bytes) before its data region "
                       "(at %llu; truncated file?)",
                       size, static_cast<unsigned long long>(padded)));
  dataStart = padded;
  uint64_t dataSize = size - dataStart;
  std::vector<size_t> order(tensorList.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensorList[a].begin < tensorList[b].begin;
  });
  // The non-empty tensor reaching furthest so far: an overlap is with it.
  const GgufTensorInfo *furthest = nullptr;
  for (size_t k = 0; k < order.size(); ++k) {
    const GgufTensorInfo &t = tensorList[order[k]];
    if (t.end > dataSize)
      return fail("tensor " + quote(t.name) +
                  format(": data [%llu, %llu) runs past the end of the "
                         "%llu-byte data region (truncated file?)",
                         static_cast<unsigned long long>(t.begin),
                         static_cast<unsigned long long>(t.end),
                         static_cast<unsigned long long>(dataSize)));
    if (t.end == t.begin)
      continue;
    if (furthest && t.begin < furthest->end)
      return fail("tensors " + quote(furthest->name) + " and " +
                  quote(t.name) +
                  format(" overlap (bytes [%llu, %llu) and [%llu, %llu) of "
                         "the data region)",
                         static_cast<unsigned long long>(furthest->begin),
                         static_cast<unsigned long long>(furthest->end),
                         static_cast<unsigned long long>(t.begin),
                         static_cast<unsigned long long>(t.end)));
    if (!furthest || t.end > furthest->end)
      furthest = &t;
  }
  return true;
}

const GgufKeyValue *GgufFile::findKey(std::string_view name) const {
  auto it = keysByName.find(name);
  return it == keysByName.end() ? nullptr : &keyList[it->second];
}

int64_t GgufFile::find(std::string_view name) const {
  auto it = tensorsByName.find(name);
  return it == tensorsByName.end() ? -1 : static_cast<int64_t>(it->second);
}

std::string GgufFile::keyError(const GgufKeyValue &kv,
                               const char *expected) const {
  return where() + "metadata key " + quote(kv.name) + ": expected " +
         expected + ", found " + ggufTypeName(kv.type, kv.elementType);
}

const GgufKeyValue *GgufFile::typed(std::string_view key,
                                    std::string &error) const {
  const GgufKeyValue *kv = findKey(key);
  if (!kv)
    error = where() + "metadata key " + quote(key) + " is missing";
  return kv;
}

bool GgufFile::getString(std::string_view key, std::string_view &value,
                         std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (kv->type != GgufType::String) {
    error = keyError(*kv, "string");
    return false;
  }
  uint64_t length = load<uint64_t>(base + kv->offset);
  value = std::string_view(reinterpret_cast<const char *>(base + kv->offset +
                                                          8),
                           static_cast<size_t>(length));
  return true;
}

bool GgufFile::getUnsigned(std::string_view key, uint64_t &value,
                           std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (!isInteger(kv->type)) {
    error = keyError(*kv, "an unsigned integer");
    return false;
  }
  bool negative;
  loadInteger(kv->type, base + kv->offset, value, negative);
  if (negative) {
    error = where() + "metadata key " + quote(kv->name) +
            format(": %lld is negative", static_cast<long long>(value));
    return false;
  }
  return true;
}

bool GgufFile::getSigned(std::string_view key, int64_t &value,
                         std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (!isInteger(kv->type)) {
    error = keyError(*kv, "an integer");
    return false;
  }
  uint64_t bits;
  bool negative;
  loadInteger(kv->type, base + kv->offset, bits, negative);
  if (!isSigned(kv->type) && bits > uint64_t(INT64_MAX)) {
    error = where() + "metadata key " + quote(kv->name) +
            format(": %llu does not fit in i64",
                   static_cast<unsigned long long>(bits));
    return false;
  }
  value = static_cast<int64_t>(bits);
  return true;
}

bool GgufFile::getFloat(std::string_view key, double &value,
                        std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (kv->type == GgufType::F32)
    value = load<float>(base + kv->offset);
  else if (kv->type == GgufType::F64)
    value = load<double>(base + kv->offset);
  else {
    error = keyError(*kv, "f32 or f64");
    return false;
  }
  return true;
}

bool GgufFile::getBool(std::string_view key, bool &value,
                       std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (kv->type != GgufType::Bool) {
    error = keyError(*kv, "bool");
    return false;
  }
  value = base[kv->offset] != 0;
  return true;
}

bool GgufFile::getStringArray(std::string_view key,
                              std::vector<std::string_view> &values,
                              std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (kv->type != GgufType::Array || kv->elementType != GgufType::String) {
    error = keyError(*kv, "array of string");
    return false;
  }
  values.clear();
  values.reserve(kv->count);
  // Validated at open: every length lies inside the file.
  uint64_t at = kv->offset;
  for (uint64_t i = 0; i < kv->count; ++i) {
    uint64_t length = load<uint64_t>(base + at);
    values.emplace_back(reinterpret_cast<const char *>(base + at + 8),
                        static_cast<size_t>(length));
    at += 8 + length;
  }
  return true;
}

bool GgufFile::getIntegerArray(std::string_view key,
                               std::vector<int64_t> &values,
                               std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (kv->type != GgufType::Array || !isInteger(kv->elementType)) {
    error = keyError(*kv, "array of integers");
    return false;
  }
  values.resize(kv->count);
  uint64_t width = fixedSize(kv->elementType);
  for (uint64_t i = 0; i < kv->count; ++i) {
    uint64_t bits;
    bool negative;
    loadInteger(kv->elementType, base + kv->offset + i * width, bits,
                negative);
    if (!isSigned(kv->elementType) && bits > uint64_t(INT64_MAX)) {
      error = where() + "metadata key " + quote(kv->name) +
              format(": element %llu (%llu) does not fit in i64",
                     static_cast<unsigned long long>(i),
                     static_cast<unsigned long long>(bits));
      return false;
    }
    values[i] = static_cast<int64_t>(bits);
  }
  return true;
}

bool GgufFile::getFloatArray(std::string_view key, std::vector<double> &values,
                             std::string &error) const {
  const GgufKeyValue *kv = typed(key, error);
  if (!kv)
    return false;
  if (kv->type != GgufType::Array ||
      (kv->elementType != GgufType::F32 && kv->elementType != GgufType::F64)) {
    error = keyError(*kv, "array of f32 or f64");
    return false;
  }
  values.resize(kv->count);
  for (uint64_t i = 0; i < kv->count; ++i)
    values[i] = kv->elementType == GgufType::F32
                    ? double(load<float>(base + kv->offset + 4 * i))
                    : load<double>(base + kv->offset + 8 * i);
  return true;
}

} // namespace attnrt
