// Executables: verified kernel containers, and the caches that prepare them.
//
// An executable file is a 16-byte header followed by one FlatBuffer (schemas
// in hal/schemas/). The header tells the formats apart:
//
//   offset 0  char[4]  magic   "HSIM" "HPTX" "HHIP" "HAMD" "HSPV" "HMSL"
//   offset 4  u32 LE   version kExecutableFileVersion
//   offset 8  u64 LE   total size of the file, header included
//
// ParseExecutable verifies untrusted bytes completely (the FlatBuffers
// verifier, then every count, size and cross-reference) without a device;
// malformed input is INVALID_ARGUMENT naming what was wrong, never a crash.
// Devices prepare parsed executables through an ExecutableCache; the result
// is an Executable whose functions (exports) DispatchParams::entry_point
// indexes. See docs/executables.md.
//
// Thread safety: ParseExecutable and every const method may be called from
// any thread. An ExecutableCache may be used from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hal/ref.h"
#include "hal/status.h"

namespace hal {

enum class ExecutableFormat : uint32_t {
  kUnknown = 0,
  kSim = 1,              // native host code for the simulator ("HSIM")
  kCudaPtx = 2,          // PTX text ("HPTX")
  kHipHsaco = 3,         // HSACO code objects ("HHIP")
  kAmdgpuCodeObject = 4, // code objects + ISA name ("HAMD")
  kLevelZeroSpirv = 5,   // SPIR-V ("HSPV")
  kMetalMsl = 6,         // MSL source ("HMSL")
};
inline constexpr ExecutableFormat kAllExecutableFormats[] = {
    ExecutableFormat::kSim,           ExecutableFormat::kCudaPtx,
    ExecutableFormat::kHipHsaco,      ExecutableFormat::kAmdgpuCodeObject,
    ExecutableFormat::kLevelZeroSpirv, ExecutableFormat::kMetalMsl,
};

// "sim", "cuda-ptx", "hip-hsaco", "amdgpu-code-object", "level-zero-spirv",
// "metal-msl"; "unknown" otherwise. These are also the file suffixes of the
// test kernels (test_kernels.<name>).
const char* ExecutableFormatName(ExecutableFormat format);
// Inverse of ExecutableFormatName; INVALID_ARGUMENT for an unknown name.
StatusOr<ExecutableFormat> ParseExecutableFormatName(std::string_view name);
// The 4-byte magic of a format (not NUL-terminated); nullptr for kUnknown.
const char* ExecutableFormatMagic(ExecutableFormat format);

inline constexpr uint32_t kExecutableFileVersion = 1;
inline constexpr size_t kExecutableHeaderSize = 16;
// Limits every format enforces (and every driver can meet).
inline constexpr uint32_t kMaxWorkgroupInvocations = 1024;
inline constexpr uint32_t kMaxDispatchBindings = 64;
inline constexpr uint32_t kMaxDispatchConstants = 64;
inline constexpr uint32_t kMaxSpecializationConstants = 256;
inline constexpr size_t kMaxExportNameLength = 255;

// Bits of FunctionInfo::binding_flags (= hal.fb.BindingFlagBits).
enum class BindingFlags : uint32_t {
  kNone = 0,
  kReadOnly = 1u << 0,
};
inline constexpr uint32_t kKnownBindingFlags = 1u;

// Reflection data of one export.
struct FunctionInfo {
  std::string name;
  uint32_t module_ordinal = 0;
  uint32_t workgroup_size[3] = {1, 1, 1};
  uint32_t shared_memory_size = 0;
  uint32_t constant_count = 0;
  uint32_t binding_count = 0;
  std::vector<BindingFlags> binding_flags;  // binding_count entries

  bool binding_read_only(uint32_t i) const {
    return (static_cast<uint32_t>(binding_flags[i]) &
            static_cast<uint32_t>(BindingFlags::kReadOnly)) != 0;
  }
};

// One code module, copied out of the file.
struct ExecutableModule {
  std::vector<uint8_t> code;  // ELF, PTX/MSL text (no NUL), SPIR-V bytes
  std::string isa;            // kAmdgpuCodeObject only
};

// A verified executable file, independent of any device.
struct ExecutableData {
  ExecutableFormat format = ExecutableFormat::kUnknown;
  uint32_t specialization_constant_count = 0;
  std::vector<FunctionInfo> functions;
  std::vector<ExecutableModule> modules;
};

// Reads the header only: INVALID_ARGUMENT when the bytes are too short or the
// magic is not one of the formats. Does not check the version or size.
StatusOr<ExecutableFormat> IdentifyExecutableFormat(std::span<const uint8_t> data);

// Verifies and parses a whole file. INVALID_ARGUMENT, with the reason, for:
// a short or unknown header; a version other than kExecutableFileVersion; a
// header size that is not data.size(); a FlatBuffer the verifier rejects (or
// with the wrong file identifier); no exports or no modules; an export name
// that is empty, too long, not an identifier or duplicated; a module ordinal
// out of range; a workgroup size that does not have 3 nonzero entries or
// exceeds kMaxWorkgroupInvocations; counts above the limits; binding_flags
// whose length is not binding_count or with unknown bits; an empty module or
// one whose contents do not match the format (ELF magic and machine, SPIR-V
// magic, a PTX module lacking an export's `.entry`). The input is not
// retained; it needs no particular alignment.
StatusOr<ExecutableData> ParseExecutable(std::span<const uint8_t> data);

// Builds a file from parsed data (the inverse of ParseExecutable; used by
// hal-pack and by tests that need well-formed files). Checks nothing beyond
// what it needs to encode: parse the result to validate it.
std::vector<uint8_t> SerializeExecutable(const ExecutableData& data);

// A prepared executable: reflection plus the driver's loaded code.
class Executable : public RefCounted {
 public:
  ExecutableFormat format() const { return format_; }
  uint32_t function_count() const {
    return static_cast<uint32_t>(functions_.size());
  }
  // OUT_OF_RANGE for an index at or above function_count().
  StatusOr<const FunctionInfo*> function(uint32_t index) const;
  // The index of the export called `name`; NOT_FOUND when there is none.
  StatusOr<uint32_t> LookupFunction(std::string_view name) const;
  const std::vector<FunctionInfo>& functions() const { return functions_; }
  const std::vector<uint32_t>& specialization_constants() const {
    return specialization_constants_;
  }

 protected:
  Executable(ExecutableFormat format, std::vector<FunctionInfo> functions,
             std::vector<uint32_t> specialization_constants)
      : format_(format),
        functions_(std::move(functions)),
        specialization_constants_(std::move(specialization_constants)) {}

 private:
  ExecutableFormat format_;
  std::vector<FunctionInfo> functions_;
  std::vector<uint32_t> specialization_constants_;
};

struct ExecutableParams {
  // kUnknown: take the format from the header. Otherwise the header must
  // match (INVALID_ARGUMENT).
  ExecutableFormat format = ExecutableFormat::kUnknown;
  // The file bytes; only borrowed for the call.
  std::span<const uint8_t> data;
  // Exactly the executable's specialization_constant_count values.
  std::span<const uint32_t> specialization_constants;
};

// Prepares executables for one device. Created by Device::CreateExecutableCache.
class ExecutableCache : public RefCounted {
 public:
  // Whether Prepare can load this format on this device.
  bool CanPrepareFormat(ExecutableFormat format) const {
    return format != ExecutableFormat::kUnknown && CanPrepareFormatImpl(format);
  }
  // Parses and verifies `params.data` (see ParseExecutable), then loads it.
  // INVALID_ARGUMENT for malformed bytes, a format that does not match
  // params.format, a format CanPrepareFormat rejects, or a specialization
  // constant count that differs from the executable's. Driver errors (a
  // module the loader rejects, a missing symbol) are reported as the driver
  // sees them, INVALID_ARGUMENT for bad code.
  StatusOr<Ref<Executable>> Prepare(const ExecutableParams& params);

 protected:
  ExecutableCache() = default;
  virtual bool CanPrepareFormatImpl(ExecutableFormat format) const = 0;
  // `data` is verified, its format can be prepared, and the constants match
  // its count.
  virtual StatusOr<Ref<Executable>> PrepareImpl(
      ExecutableData data, std::vector<uint32_t> specialization_constants) = 0;
};

}  // namespace hal
