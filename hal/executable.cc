#include "hal/executable.h"

#include <cstring>
#include <unordered_set>

#include "hal/formats/elf_reader.h"
#include "hal/formats/ptx_reader.h"
#include "hal/formats/spirv_reader.h"
#include "hal/schemas/amdgpu_executable_generated.h"
#include "hal/schemas/cuda_executable_generated.h"
#include "hal/schemas/hip_executable_generated.h"
#include "hal/schemas/level_zero_executable_generated.h"
#include "hal/schemas/metal_executable_generated.h"
#include "hal/schemas/sim_executable_generated.h"

namespace hal {

namespace {

struct FormatEntry {
  ExecutableFormat format;
  const char* name;
  const char* magic;
};
constexpr FormatEntry kFormats[] = {
    {ExecutableFormat::kSim, "sim", "HSIM"},
    {ExecutableFormat::kCudaPtx, "cuda-ptx", "HPTX"},
    {ExecutableFormat::kHipHsaco, "hip-hsaco", "HHIP"},
    {ExecutableFormat::kAmdgpuCodeObject, "amdgpu-code-object", "HAMD"},
    {ExecutableFormat::kLevelZeroSpirv, "level-zero-spirv", "HSPV"},
    {ExecutableFormat::kMetalMsl, "metal-msl", "HMSL"},
};

const FormatEntry* FindFormat(ExecutableFormat format) {
  for (const auto& f : kFormats) {
    if (f.format == format) return &f;
  }
  return nullptr;
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // the header is little-endian; so are our hosts
  return v;
}
uint64_t LoadU64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

bool IsIdentifier(const flatbuffers::String* s) {
  if (!s || s->size() == 0 || s->size() > kMaxExportNameLength) return false;
  for (size_t i = 0; i < s->size(); ++i) {
    char c = s->c_str()[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0)) return false;
  }
  return true;
}

// Quotes at most 64 bytes of an untrusted string, escaping non-printables.
std::string Quote(const flatbuffers::String* s) {
  if (!s) return "(null)";
  std::string out = "'";
  size_t n = std::min<size_t>(s->size(), 64);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(s->c_str()[i]);
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (s->size() > n) out += "...";
  return out + "'";
}

Status ParseExport(const fb::ExportDef* e, size_t index, size_t module_count,
                   FunctionInfo* out) {
  if (!e) return InvalidArgumentError("export %zu is null", index);
  if (!IsIdentifier(e->name())) {
    return InvalidArgumentError(
        "export %zu: name %s is not an identifier of 1..%zu characters "
        "[A-Za-z_][A-Za-z0-9_]*",
        index, Quote(e->name()).c_str(), kMaxExportNameLength);
  }
  out->name.assign(e->name()->c_str(), e->name()->size());
  const char* name = out->name.c_str();
  if (e->module_ordinal() >= module_count) {
    return InvalidArgumentError(
        "export %zu ('%s'): module ordinal %u is out of range (%zu modules)",
        index, name, e->module_ordinal(), module_count);
  }
  out->module_ordinal = e->module_ordinal();
  const auto* wg = e->workgroup_size();
  if (!wg || wg->size() != 3) {
    return InvalidArgumentError(
        "export %zu ('%s'): workgroup size has %u entries, needs 3", index,
        name, wg ? wg->size() : 0u);
  }
  uint64_t invocations = 1;
  for (uint32_t i = 0; i < 3; ++i) {
    uint32_t v = wg->Get(i);
    if (v == 0) {
      return InvalidArgumentError(
          "export %zu ('%s'): workgroup size [%u, %u, %u] has a zero entry",
          index, name, wg->Get(0), wg->Get(1), wg->Get(2));
    }
    out->workgroup_size[i] = v;
    invocations *= v;
    if (invocations > kMaxWorkgroupInvocations) {
      return InvalidArgumentError(
          "export %zu ('%s'): workgroup size [%u, %u, %u] exceeds %u "
          "invocations",
          index, name, wg->Get(0), wg->Get(1), wg->Get(2),
          kMaxWorkgroupInvocations);
    }
  }
  out->shared_memory_size = e->shared_memory_size();
  if (e->constant_count() > kMaxDispatchConstants) {
    return InvalidArgumentError(
        "export %zu ('%s'): %u constants exceed the limit of %u", index, name,
        e->constant_count(), kMaxDispatchConstants);
  }
  out->constant_count = e->constant_count();
  if (e->binding_count() > kMaxDispatchBindings) {
    return InvalidArgumentError(
        "export %zu ('%s'): %u bindings exceed the limit of %u", index, name,
        e->binding_count(), kMaxDispatchBindings);
  }
  out->binding_count = e->binding_count();
  const auto* flags = e->binding_flags();
  uint32_t flag_count = flags ? flags->size() : 0;
  if (flag_count != out->binding_count) {
    return InvalidArgumentError(
        "export %zu ('%s'): %u binding flags for %u bindings", index, name,
        flag_count, out->binding_count);
  }
  out->binding_flags.resize(flag_count);
  for (uint32_t i = 0; i < flag_count; ++i) {
    uint32_t f = flags->Get(i);
    if (f & ~kKnownBindingFlags) {
      return InvalidArgumentError(
          "export %zu ('%s'): binding %u has unknown flag bits 0x%x", index,
          name, i, f & ~kKnownBindingFlags);
    }
    out->binding_flags[i] = static_cast<BindingFlags>(f);
  }
  return OkStatus();
}

// ELF64, little-endian, and (when nonzero) the given e_machine.
Status CheckElf(const std::vector<uint8_t>& code, uint16_t machine,
                const char* what, size_t index) {
  formats::ElfHeader h;
  switch (formats::ReadElfHeader(code, &h)) {
    case formats::ElfError::kOk:
      break;
    case formats::ElfError::kNotElf64Lsb:
      return InvalidArgumentError(
          "module %zu: %s is not a little-endian ELF64 image", index, what);
    default:  // too short, or no magic
      return InvalidArgumentError("module %zu: %s is not an ELF image", index,
                                  what);
  }
  if (machine && h.machine != machine) {
    return InvalidArgumentError(
        "module %zu: %s has ELF machine %u, expected %u", index, what,
        h.machine, machine);
  }
  // Loaders read the image in place from its headers (hipModuleLoadDataEx
  // takes no size), so the section header table must lie inside it.
  const uint64_t table = uint64_t{h.shentsize} * h.shnum;
  if (!formats::ElfBytes(code, h.shoff, table)) {
    return InvalidArgumentError(
        "module %zu: %s has section headers at [%llu, +%llu) outside its %zu "
        "bytes",
        index, what, static_cast<unsigned long long>(h.shoff),
        static_cast<unsigned long long>(table), code.size());
  }
  return OkStatus();
}

template <typename T>
void CopyBytes(const flatbuffers::Vector<T>* v, std::vector<uint8_t>* out) {
  // assign, not resize + memcpy: no zero fill of bytes about to be copied.
  const auto* bytes = reinterpret_cast<const uint8_t*>(v->Data());
  out->assign(bytes, bytes + v->size() * sizeof(T));
}
void CopyString(const flatbuffers::String* s, std::vector<uint8_t>* out) {
  out->assign(s->c_str(), s->c_str() + s->size());
}

// The names of a PTX module's entries. A malformed `.entry` ends the list:
// the exports after it are not found (the text is not valid PTX anyway).
std::unordered_set<std::string> PtxEntryNames(const std::vector<uint8_t>& ptx) {
  std::vector<formats::PtxEntry> entries;
  std::string error;
  formats::ReadPtxEntries(
      std::string_view(reinterpret_cast<const char*>(ptx.data()), ptx.size()),
      &entries, &error);
  std::unordered_set<std::string> names;
  for (formats::PtxEntry& e : entries) names.insert(std::move(e.name));
  return names;
}

// Per-format module extraction. Each returns the module's bytes (and ISA).
Status ReadModule(const fb::SimModuleDef* m, size_t i, ExecutableModule* out) {
  CopyBytes(m->elf(), &out->code);
  return CheckElf(out->code, 0, "sim module", i);
}
Status ReadModule(const fb::PtxModuleDef* m, size_t i, ExecutableModule* out) {
  CopyString(m->ptx(), &out->code);
  if (out->code.empty())
    return InvalidArgumentError("module %zu: PTX is empty", i);
  if (std::memchr(out->code.data(), 0, out->code.size())) {
    return InvalidArgumentError("module %zu: PTX text contains a NUL byte", i);
  }
  return OkStatus();
}
Status ReadModule(const fb::HsacoModuleDef* m, size_t i,
                  ExecutableModule* out) {
  CopyBytes(m->hsaco(), &out->code);
  return CheckElf(out->code, formats::kElfMachineAmdgpu, "HSACO", i);
}
Status ReadModule(const fb::AmdgpuCodeObjectDef* m, size_t i,
                  ExecutableModule* out) {
  if (m->isa()->size() == 0 || m->isa()->size() > 256) {
    return InvalidArgumentError("module %zu: ISA name %s is empty or too long",
                                i, Quote(m->isa()).c_str());
  }
  out->isa.assign(m->isa()->c_str(), m->isa()->size());
  if (out->isa.find('\0') != std::string::npos) {
    return InvalidArgumentError("module %zu: ISA name contains a NUL byte", i);
  }
  CopyBytes(m->code_object(), &out->code);
  return CheckElf(out->code, formats::kElfMachineAmdgpu, "code object", i);
}
Status ReadModule(const fb::SpirvModuleDef* m, size_t i,
                  ExecutableModule* out) {
  CopyBytes(m->spirv(), &out->code);
  if (out->code.size() < 20 ||
      LoadU32(out->code.data()) != formats::kSpirvMagic) {
    return InvalidArgumentError(
        "module %zu: SPIR-V lacks the 5-word header with magic 0x%08x", i,
        formats::kSpirvMagic);
  }
  return OkStatus();
}
Status ReadModule(const fb::MslModuleDef* m, size_t i, ExecutableModule* out) {
  CopyString(m->source(), &out->code);
  if (out->code.empty()) {
    return InvalidArgumentError("module %zu: MSL source is empty", i);
  }
  return OkStatus();
}

template <typename Root>
Status ParseRoot(const Root* root, ExecutableFormat format,
                 ExecutableData* out) {
  out->format = format;
  const auto* modules = root->modules();
  const auto* exports = root->exports();
  if (modules->size() == 0)
    return InvalidArgumentError("executable has no modules");
  if (exports->size() == 0)
    return InvalidArgumentError("executable has no exports");
  if (root->specialization_constant_count() > kMaxSpecializationConstants) {
    return InvalidArgumentError(
        "%u specialization constants exceed the limit of %u",
        root->specialization_constant_count(), kMaxSpecializationConstants);
  }
  out->specialization_constant_count = root->specialization_constant_count();
  out->modules.resize(modules->size());
  for (uint32_t i = 0; i < modules->size(); ++i) {
    const auto* m = modules->Get(i);
    if (!m) return InvalidArgumentError("module %u is null", i);
    HAL_RETURN_IF_ERROR(ReadModule(m, i, &out->modules[i]));
  }
  // Each PTX module's entries, read once for all its exports.
  std::vector<std::unordered_set<std::string>> ptx_entries;
  if (format == ExecutableFormat::kCudaPtx) {
    for (const ExecutableModule& m : out->modules) {
      ptx_entries.push_back(PtxEntryNames(m.code));
    }
  }
  out->functions.resize(exports->size());
  std::unordered_set<std::string> names;
  for (uint32_t i = 0; i < exports->size(); ++i) {
    FunctionInfo& f = out->functions[i];
    HAL_RETURN_IF_ERROR(ParseExport(exports->Get(i), i, modules->size(), &f));
    if (!names.insert(f.name).second) {
      return InvalidArgumentError("export %u: name '%s' is not unique", i,
                                  f.name.c_str());
    }
    if (format == ExecutableFormat::kCudaPtx &&
        !ptx_entries[f.module_ordinal].count(f.name)) {
      return InvalidArgumentError("export %u: PTX module %u has no '.entry %s'",
                                  i, f.module_ordinal, f.name.c_str());
    }
  }
  return OkStatus();
}

template <typename Root>
Status VerifyAndParse(const uint8_t* fb_data, size_t size, const char* ident,
                      ExecutableFormat format, ExecutableData* out) {
  flatbuffers::Verifier verifier(fb_data, size, /*max_depth=*/16,
                                 /*max_tables=*/1u << 20);
  if (!verifier.VerifyBuffer<Root>(ident)) {
    return InvalidArgumentError(
        "%s executable: the FlatBuffer failed verification (corrupt or not a "
        "%s file)",
        ExecutableFormatName(format), ident);
  }
  return ParseRoot(flatbuffers::GetRoot<Root>(fb_data), format, out);
}

// Serialization of the common export table.
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::ExportDef>>>
BuildExports(flatbuffers::FlatBufferBuilder& b, const ExecutableData& data) {
  std::vector<flatbuffers::Offset<fb::ExportDef>> exports;
  for (const FunctionInfo& f : data.functions) {
    std::vector<uint32_t> wg(f.workgroup_size, f.workgroup_size + 3);
    std::vector<uint32_t> flags;
    for (BindingFlags bf : f.binding_flags)
      flags.push_back(static_cast<uint32_t>(bf));
    exports.push_back(fb::CreateExportDefDirect(
        b, f.name.c_str(), f.module_ordinal, &wg, f.shared_memory_size,
        f.constant_count, f.binding_count, &flags));
  }
  return b.CreateVector(exports);
}

template <typename T>
flatbuffers::Offset<flatbuffers::Vector<T>> BuildVector(
    flatbuffers::FlatBufferBuilder& b, const std::vector<uint8_t>& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return b.CreateVector(v);
}

flatbuffers::Offset<flatbuffers::String> BuildString(
    flatbuffers::FlatBufferBuilder& b, const std::vector<uint8_t>& bytes) {
  return b.CreateString(reinterpret_cast<const char*>(bytes.data()),
                        bytes.size());
}

}  // namespace

const char* ExecutableFormatName(ExecutableFormat format) {
  const FormatEntry* f = FindFormat(format);
  return f ? f->name : "unknown";
}

StatusOr<ExecutableFormat> ParseExecutableFormatName(std::string_view name) {
  for (const auto& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return InvalidArgumentError(
      "unknown executable format '%.*s' (known: sim, cuda-ptx, hip-hsaco, "
      "amdgpu-code-object, level-zero-spirv, metal-msl)",
      static_cast<int>(std::min<size_t>(name.size(), 64)), name.data());
}

const char* ExecutableFormatMagic(ExecutableFormat format) {
  const FormatEntry* f = FindFormat(format);
  return f ? f->magic : nullptr;
}

StatusOr<ExecutableFormat> IdentifyExecutableFormat(
    std::span<const uint8_t> data) {
  if (data.size() < kExecutableHeaderSize) {
    return InvalidArgumentError(
        "executable is %zu bytes, shorter than its %zu-byte header",
        data.size(), kExecutableHeaderSize);
  }
  for (const auto& f : kFormats) {
    if (std::memcmp(data.data(), f.magic, 4) == 0) return f.format;
  }
  return InvalidArgumentError(
      "executable magic 0x%02x%02x%02x%02x is not one of HSIM, HPTX, HHIP, "
      "HAMD, HSPV, HMSL",
      data[0], data[1], data[2], data[3]);
}

StatusOr<ExecutableData> ParseExecutable(std::span<const uint8_t> data) {
  HAL_ASSIGN_OR_RETURN(ExecutableFormat format, IdentifyExecutableFormat(data));
  uint32_t version = LoadU32(data.data() + 4);
  if (version != kExecutableFileVersion) {
    return InvalidArgumentError(
        "%s executable: file version %u is not supported (expected %u)",
        ExecutableFormatName(format), version, kExecutableFileVersion);
  }
  uint64_t total = LoadU64(data.data() + 8);
  if (total != data.size()) {
    return InvalidArgumentError(
        "%s executable: header says %llu bytes, the data has %zu",
        ExecutableFormatName(format), (unsigned long long)total, data.size());
  }
  size_t fb_size = data.size() - kExecutableHeaderSize;
  if (fb_size < 8 || fb_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return InvalidArgumentError(
        "%s executable: FlatBuffer of %zu bytes is too small or too large",
        ExecutableFormatName(format), fb_size);
  }
  // The FlatBuffer is read in place after a copy into 8-byte-aligned storage:
  // callers' spans carry no alignment promise, and the verifier checks
  // alignment relative to the buffer start.
  std::vector<uint64_t> aligned((fb_size + 7) / 8);
  std::memcpy(aligned.data(), data.data() + kExecutableHeaderSize, fb_size);
  const uint8_t* fb_data = reinterpret_cast<const uint8_t*>(aligned.data());
  const char* ident = ExecutableFormatMagic(format);

  ExecutableData out;
  Status s;
  switch (format) {
    case ExecutableFormat::kSim:
      s = VerifyAndParse<fb::SimExecutableDef>(fb_data, fb_size, ident, format,
                                               &out);
      break;
    case ExecutableFormat::kCudaPtx:
      s = VerifyAndParse<fb::CudaExecutableDef>(fb_data, fb_size, ident, format,
                                                &out);
      break;
    case ExecutableFormat::kHipHsaco:
      s = VerifyAndParse<fb::HipExecutableDef>(fb_data, fb_size, ident, format,
                                               &out);
      break;
    case ExecutableFormat::kAmdgpuCodeObject:
      s = VerifyAndParse<fb::AmdgpuExecutableDef>(fb_data, fb_size, ident,
                                                  format, &out);
      break;
    case ExecutableFormat::kLevelZeroSpirv:
      s = VerifyAndParse<fb::LevelZeroExecutableDef>(fb_data, fb_size, ident,
                                                     format, &out);
      break;
    case ExecutableFormat::kMetalMsl:
      s = VerifyAndParse<fb::MetalExecutableDef>(fb_data, fb_size, ident,
                                                 format, &out);
      break;
    case ExecutableFormat::kUnknown:
      s = InvalidArgumentError("unknown executable format");
      break;
  }
  if (!s.ok()) {
    if (s.message().rfind(ExecutableFormatName(format), 0) == 0) return s;
    return s.Annotate(std::string(ExecutableFormatName(format)) +
                      " executable");
  }
  return out;
}

std::vector<uint8_t> SerializeExecutable(const ExecutableData& data) {
  flatbuffers::FlatBufferBuilder b(4096);
  auto exports = BuildExports(b, data);
  uint32_t spec = data.specialization_constant_count;
  const char* ident = ExecutableFormatMagic(data.format);
  switch (data.format) {
    case ExecutableFormat::kSim: {
      std::vector<flatbuffers::Offset<fb::SimModuleDef>> mods;
      for (const auto& m : data.modules) {
        mods.push_back(
            fb::CreateSimModuleDef(b, BuildVector<uint8_t>(b, m.code)));
      }
      b.Finish(
          fb::CreateSimExecutableDef(b, exports, b.CreateVector(mods), spec),
          ident);
      break;
    }
    case ExecutableFormat::kCudaPtx: {
      std::vector<flatbuffers::Offset<fb::PtxModuleDef>> mods;
      for (const auto& m : data.modules) {
        mods.push_back(fb::CreatePtxModuleDef(b, BuildString(b, m.code)));
      }
      b.Finish(
          fb::CreateCudaExecutableDef(b, exports, b.CreateVector(mods), spec),
          ident);
      break;
    }
    case ExecutableFormat::kHipHsaco: {
      std::vector<flatbuffers::Offset<fb::HsacoModuleDef>> mods;
      for (const auto& m : data.modules) {
        mods.push_back(
            fb::CreateHsacoModuleDef(b, BuildVector<uint8_t>(b, m.code)));
      }
      b.Finish(
          fb::CreateHipExecutableDef(b, exports, b.CreateVector(mods), spec),
          ident);
      break;
    }
    case ExecutableFormat::kAmdgpuCodeObject: {
      std::vector<flatbuffers::Offset<fb::AmdgpuCodeObjectDef>> mods;
      for (const auto& m : data.modules) {
        auto isa = b.CreateString(m.isa);
        mods.push_back(fb::CreateAmdgpuCodeObjectDef(
            b, isa, BuildVector<uint8_t>(b, m.code)));
      }
      b.Finish(
          fb::CreateAmdgpuExecutableDef(b, exports, b.CreateVector(mods), spec),
          ident);
      break;
    }
    case ExecutableFormat::kLevelZeroSpirv: {
      std::vector<flatbuffers::Offset<fb::SpirvModuleDef>> mods;
      for (const auto& m : data.modules) {
        mods.push_back(
            fb::CreateSpirvModuleDef(b, BuildVector<uint32_t>(b, m.code)));
      }
      b.Finish(fb::CreateLevelZeroExecutableDef(b, exports,
                                                b.CreateVector(mods), spec),
               ident);
      break;
    }
    case ExecutableFormat::kMetalMsl: {
      std::vector<flatbuffers::Offset<fb::MslModuleDef>> mods;
      for (const auto& m : data.modules) {
        mods.push_back(fb::CreateMslModuleDef(b, BuildString(b, m.code)));
      }
      b.Finish(
          fb::CreateMetalExecutableDef(b, exports, b.CreateVector(mods), spec),
          ident);
      break;
    }
    case ExecutableFormat::kUnknown:
      return {};
  }
  std::vector<uint8_t> out(kExecutableHeaderSize + b.GetSize());
  std::memcpy(out.data(), ident, 4);
  uint32_t version = kExecutableFileVersion;
  uint64_t total = out.size();
  std::memcpy(out.data() + 4, &version, 4);
  std::memcpy(out.data() + 8, &total, 8);
  std::memcpy(out.data() + kExecutableHeaderSize, b.GetBufferPointer(),
              b.GetSize());
  return out;
}

StatusOr<const FunctionInfo*> Executable::function(uint32_t index) const {
  if (index >= functions_.size()) {
    return OutOfRangeError("function index %u is out of range (%zu functions)",
                           index, functions_.size());
  }
  return &functions_[index];
}

StatusOr<uint32_t> Executable::LookupFunction(std::string_view name) const {
  for (size_t i = 0; i < functions_.size(); ++i) {
    if (functions_[i].name == name) return static_cast<uint32_t>(i);
  }
  return NotFoundError("executable has no function '%.*s' (%zu functions)",
                       static_cast<int>(std::min<size_t>(name.size(), 128)),
                       name.data(), functions_.size());
}

StatusOr<Ref<Executable>> ExecutableCache::Prepare(
    const ExecutableParams& params) {
  HAL_ASSIGN_OR_RETURN(ExecutableData data, ParseExecutable(params.data));
  if (params.format != ExecutableFormat::kUnknown &&
      params.format != data.format) {
    return InvalidArgumentError(
        "Prepare: expected a %s executable, the file is %s",
        ExecutableFormatName(params.format), ExecutableFormatName(data.format));
  }
  if (!CanPrepareFormat(data.format)) {
    return InvalidArgumentError(
        "Prepare: this device cannot prepare %s executables (CanPrepareFormat "
        "is false)",
        ExecutableFormatName(data.format));
  }
  if (params.specialization_constants.size() !=
      data.specialization_constant_count) {
    return InvalidArgumentError(
        "Prepare: %zu specialization constants given, the executable declares "
        "%u",
        params.specialization_constants.size(),
        data.specialization_constant_count);
  }
  return PrepareImpl(
      std::move(data),
      std::vector<uint32_t>(params.specialization_constants.begin(),
                            params.specialization_constants.end()));
}

}  // namespace hal
