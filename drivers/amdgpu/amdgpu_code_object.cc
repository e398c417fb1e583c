#include "drivers/amdgpu/amdgpu_code_object.h"

#include <cstring>
#include <memory>

#include "hal/formats/elf_reader.h"

namespace hal::amdgpu {

namespace {

constexpr uint32_t kNtAmdgpuMetadata = 32;
constexpr int kMaxDepth = 16;

// A MessagePack value, as much of it as the metadata uses.
struct Value {
  enum class Kind {
    kNil,
    kBool,
    kInt,
    kString,
    kArray,
    kMap,
    kOther
  } kind = Kind::kNil;
  int64_t i = 0;
  std::string s;
  // kArray: the items; kMap: keys[i] -> items[i]. (A vector of the
  // incomplete Value is allowed; a vector of pairs of it is not.)
  std::vector<Value> items;
  std::vector<Value> keys;

  const Value* Get(const char* key) const {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i].kind == Kind::kString && keys[i].s == key) return &items[i];
    }
    return nullptr;
  }
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}

  bool Read(Value* out, int depth = 0) {
    if (depth > kMaxDepth) return false;
    uint8_t t;
    if (!Byte(&t)) return false;
    if (t <= 0x7f) return Int(out, t);
    if (t >= 0xe0) return Int(out, static_cast<int8_t>(t));
    if ((t & 0xf0) == 0x80) return Map(out, t & 0x0f, depth);
    if ((t & 0xf0) == 0x90) return Array(out, t & 0x0f, depth);
    if ((t & 0xe0) == 0xa0) return Str(out, t & 0x1f);
    uint64_t n;
    switch (t) {
      case 0xc0:
        out->kind = Value::Kind::kNil;
        return true;
      case 0xc2:
      case 0xc3:
        out->kind = Value::Kind::kBool;
        out->i = t == 0xc3;
        return true;
      case 0xcc:
        return Uint(1, &n) && Int(out, static_cast<int64_t>(n));
      case 0xcd:
        return Uint(2, &n) && Int(out, static_cast<int64_t>(n));
      case 0xce:
        return Uint(4, &n) && Int(out, static_cast<int64_t>(n));
      case 0xcf:
        return Uint(8, &n) && Int(out, static_cast<int64_t>(n));
      case 0xd0:
        return Uint(1, &n) && Int(out, static_cast<int8_t>(n));
      case 0xd1:
        return Uint(2, &n) && Int(out, static_cast<int16_t>(n));
      case 0xd2:
        return Uint(4, &n) && Int(out, static_cast<int32_t>(n));
      case 0xd3:
        return Uint(8, &n) && Int(out, static_cast<int64_t>(n));
      case 0xd9:
        return Uint(1, &n) && Str(out, n);
      case 0xda:
        return Uint(2, &n) && Str(out, n);
      case 0xdb:
        return Uint(4, &n) && Str(out, n);
      case 0xc4:
        return Uint(1, &n) && Skip(n);
      case 0xc5:
        return Uint(2, &n) && Skip(n);
      case 0xc6:
        return Uint(4, &n) && Skip(n);
      case 0xca:
        return Skip(4);
      case 0xcb:
        return Skip(8);
      case 0xdc:
        return Uint(2, &n) && Array(out, n, depth);
      case 0xdd:
        return Uint(4, &n) && Array(out, n, depth);
      case 0xde:
        return Uint(2, &n) && Map(out, n, depth);
      case 0xdf:
        return Uint(4, &n) && Map(out, n, depth);
      default:
        return false;  // ext types: not in AMDGPU metadata
    }
  }

 private:
  bool Byte(uint8_t* b) {
    if (at_ >= n_) return false;
    *b = p_[at_++];
    return true;
  }
  bool Uint(int bytes, uint64_t* v) {
    if (n_ - at_ < static_cast<size_t>(bytes)) return false;
    *v = 0;
    for (int i = 0; i < bytes; ++i) *v = (*v << 8) | p_[at_++];
    return true;
  }
  bool Skip(uint64_t n) {
    if (n > n_ - at_) return false;
    at_ += n;
    return true;
  }
  bool Int(Value* out, int64_t v) {
    out->kind = Value::Kind::kInt;
    out->i = v;
    return true;
  }
  bool Str(Value* out, uint64_t n) {
    if (n > n_ - at_) return false;
    out->kind = Value::Kind::kString;
    out->s.assign(reinterpret_cast<const char*>(p_ + at_), n);
    at_ += n;
    return true;
  }
  bool Array(Value* out, uint64_t n, int depth) {
    if (n > n_ - at_) return false;  // each item takes a byte at least
    out->kind = Value::Kind::kArray;
    out->items.resize(n);
    for (Value& v : out->items) {
      if (!Read(&v, depth + 1)) return false;
    }
    return true;
  }
  bool Map(Value* out, uint64_t n, int depth) {
    if (n > (n_ - at_) / 2) return false;
    out->kind = Value::Kind::kMap;
    out->keys.resize(n);
    out->items.resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      if (!Read(&out->keys[i], depth + 1) || !Read(&out->items[i], depth + 1)) {
        return false;
      }
    }
    return true;
  }

  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
};

StatusOr<std::span<const uint8_t>> FindMetadata(std::span<const uint8_t> elf) {
  formats::ElfHeader eh;
  const formats::ElfError header = formats::ReadElfHeader(elf, &eh);
  if (header == formats::ElfError::kTooShort) {
    return InvalidArgumentError(
        "amdgpu code object: shorter than an ELF header");
  }
  if (header != formats::ElfError::kOk ||
      eh.machine != formats::kElfMachineAmdgpu) {
    return InvalidArgumentError(
        "amdgpu code object: not a 64-bit EM_AMDGPU ELF");
  }
  formats::ElfImage image;
  if (formats::ElfImage::Open(elf, &image) != formats::ElfError::kOk) {
    return InvalidArgumentError(
        "amdgpu code object: section headers outside the image");
  }
  std::vector<formats::ElfNote> notes;
  for (const formats::ElfSection& sh : image.sections()) {
    if (sh.type != formats::kElfSectionNote) continue;
    if (image.ReadNotes(sh, &notes) != formats::ElfError::kOk) {
      return InvalidArgumentError("amdgpu code object: note outside the image");
    }
    for (const formats::ElfNote& note : notes) {
      if (note.type == kNtAmdgpuMetadata && note.name.size() == 7 &&
          std::memcmp(note.name.data(), "AMDGPU", 7) == 0) {
        return note.desc;
      }
    }
  }
  return InvalidArgumentError(
      "amdgpu code object: no AMDGPU metadata note (NT_AMDGPU_METADATA)");
}

}  // namespace

StatusOr<KernelArgumentLayouts> ReadKernelArgumentLayouts(
    std::span<const uint8_t> elf) {
  HAL_ASSIGN_OR_RETURN(std::span<const uint8_t> note, FindMetadata(elf));
  Value root;
  Reader reader(note.data(), note.size());
  if (!reader.Read(&root) || root.kind != Value::Kind::kMap) {
    return InvalidArgumentError(
        "amdgpu code object: malformed MessagePack metadata");
  }
  const Value* kernels = root.Get("amdhsa.kernels");
  if (!kernels || kernels->kind != Value::Kind::kArray) {
    return InvalidArgumentError(
        "amdgpu code object: metadata without amdhsa.kernels");
  }
  KernelArgumentLayouts layouts;
  for (const Value& k : kernels->items) {
    const Value* name = k.Get(".name");
    const Value* args = k.Get(".args");
    if (!name || name->kind != Value::Kind::kString) {
      return InvalidArgumentError("amdgpu code object: kernel without .name");
    }
    std::vector<KernelArgument>& out = layouts[name->s];
    if (!args) continue;  // a kernel without arguments
    if (args->kind != Value::Kind::kArray) {
      return InvalidArgumentError("amdgpu code object: '%s': malformed .args",
                                  name->s.c_str());
    }
    for (const Value& a : args->items) {
      const Value* offset = a.Get(".offset");
      const Value* size = a.Get(".size");
      const Value* kind = a.Get(".value_kind");
      if (!offset || !size || offset->kind != Value::Kind::kInt ||
          size->kind != Value::Kind::kInt || offset->i < 0 || size->i <= 0 ||
          offset->i > 4096 || size->i > 4096) {
        return InvalidArgumentError(
            "amdgpu code object: '%s': argument without a valid .offset and "
            ".size",
            name->s.c_str());
      }
      if (kind && kind->kind == Value::Kind::kString &&
          kind->s.rfind("hidden_", 0) == 0) {
        continue;
      }
      out.push_back(
          {static_cast<uint32_t>(offset->i), static_cast<uint32_t>(size->i)});
    }
  }
  return layouts;
}

}  // namespace hal::amdgpu
