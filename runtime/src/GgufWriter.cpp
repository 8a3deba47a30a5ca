//===- GgufWriter.cpp - write GGUF files ----------------------------------===//

#include "GgufWriter.h"

#include "Support.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace attnrt {

namespace {

template <typename T> void put(std::string &out, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

void putString(std::string &out, std::string_view text) {
  put<uint64_t>(out, text.size());
  out.append(text);
}

template <typename T>
std::string encodeArray(GgufType element, const std::vector<T> &values) {
  std::string out;
  put<uint32_t>(out, static_cast<uint32_t>(element));
  put<uint64_t>(out, values.size());
  for (const T &v : values)
    put<T>(out, v);
  return out;
}

uint64_t padTo(uint64_t offset, uint64_t alignment) {
  return (offset + alignment - 1) / alignment * alignment;
}

} // namespace

void GgufWriter::set(std::string_view key, GgufType type,
                     std::string encoded) {
  for (Key &k : keys)
    if (k.name == key) {
      k.type = type;
      k.encoded = std::move(encoded);
      return;
    }
  keys.push_back({std::string(key), type, std::move(encoded)});
}

void GgufWriter::setRaw(std::string_view key, GgufType type,
                        std::string encoded) {
  set(key, type, std::move(encoded));
}

void GgufWriter::setU32(std::string_view key, uint32_t value) {
  std::string e;
  put(e, value);
  set(key, GgufType::U32, e);
}
void GgufWriter::setI32(std::string_view key, int32_t value) {
  std::string e;
  put(e, value);
  set(key, GgufType::I32, e);
}
void GgufWriter::setU64(std::string_view key, uint64_t value) {
  std::string e;
  put(e, value);
  set(key, GgufType::U64, e);
}
void GgufWriter::setF32(std::string_view key, float value) {
  std::string e;
  put(e, value);
  set(key, GgufType::F32, e);
}
void GgufWriter::setBool(std::string_view key, bool value) {
  set(key, GgufType::Bool, std::string(1, value ? '\1' : '\0'));
}
void GgufWriter::setString(std::string_view key, std::string_view value) {
  std::string e;
  putString(e, value);
  set(key, GgufType::String, e);
}
void GgufWriter::setStringArray(std::string_view key,
                                const std::vector<std::string> &values) {
  std::string e;
  put<uint32_t>(e, static_cast<uint32_t>(GgufType::String));
  put<uint64_t>(e, values.size());
  for (const std::string &v : values)
    putString(e, v);
  set(key, GgufType::Array, e);
}
void GgufWriter::setI32Array(std::string_view key,
                             const std::vector<int32_t> &values) {
  set(key, GgufType::Array, encodeArray(GgufType::I32, values));
}
void GgufWriter::setF32Array(std::string_view key,
                             const std::vector<float> &values) {
  set(key, GgufType::Array, encodeArray(GgufType::F32, values));
}

void GgufWriter::addTensor(std::string_view name, GgmlType type,
                           const std::vector<int64_t> &dims, std::string data) {
  tensorList.push_back({std::string(name), type, dims, std::move(data)});
}

uint64_t GgufWriter::alignment() const {
  for (const Key &k : keys)
    if (k.name == "general.alignment" && k.type == GgufType::U32) {
      uint32_t value;
      std::memcpy(&value, k.encoded.data(), 4);
      if (value && !(value & (value - 1)))
        return value;
    }
  return GgufFile::defaultAlignment;
}

uint64_t GgufWriter::tensorInfoOffset(size_t tensor) const {
  uint64_t offset = 4 + 4 + 8 + 8;
  for (const Key &k : keys)
    offset += 8 + k.name.size() + 4 + k.encoded.size();
  for (size_t i = 0; i < tensor; ++i)
    offset += 8 + tensorList[i].name.size() + 4 +
              8 * tensorList[i].dims.size() + 4 + 8;
  return offset;
}

std::string GgufWriter::bytes(uint32_t version) const {
  uint64_t align = alignment();
  std::string out = "GGUF";
  put<uint32_t>(out, version);
  put<uint64_t>(out, tensorList.size());
  put<uint64_t>(out, keys.size());
  for (const Key &k : keys) {
    putString(out, k.name);
    put<uint32_t>(out, static_cast<uint32_t>(k.type));
    out += k.encoded;
  }
  uint64_t offset = 0;
  for (const Tensor &t : tensorList) {
    putString(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims)
      put<uint64_t>(out, static_cast<uint64_t>(d));
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset = padTo(offset + t.data.size(), align);
  }
  out.resize(padTo(out.size(), align), '\0');
  for (const Tensor &t : tensorList) {
    out += t.data;
    out.resize(padTo(out.size(), align), '\0');
  }
  return out;
}

bool GgufWriter::write(const std::string &path, std::string &error,
                       uint32_t version) const {
  std::string data = bytes(version);
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    error = path + ": write failed: " + std::strerror(errno);
  return ok;
}

} // namespace attnrt
