// CTS: executable files (every produced format), verification of malformed
// bytes, executable caches and reflection.
#include "hal/executable.h"

#include <cstring>
#include <string>
#include <vector>

#include "hal/cts/cts.h"
#include "hal/cts/test_kernels.h"
#include "hal/schemas/sim_executable_generated.h"

namespace hal::cts {
namespace {

// What the test kernels must declare, written out independently of
// test_kernels.manifest so that a drift in either shows up here.
struct Expected {
  const char* name;
  uint32_t module;
  uint32_t wg[3];
  uint32_t constants;
  const char* bindings;  // one letter per binding: r (read-only) or w
};
constexpr Expected kExpected[] = {
    {"fill", 0, {64, 1, 1}, 2, "w"},
    {"copy", 0, {64, 1, 1}, 1, "rw"},
    {"abs_i32", 0, {64, 1, 1}, 1, "rw"},
    {"scale_offset", 0, {64, 1, 1}, 3, "rw"},
    {"iota", 0, {64, 1, 1}, 2, "w"},
    {"write_ids", 0, {2, 2, 1}, 2, "w"},
    {"increment", 0, {64, 1, 1}, 1, "w"},
    {"decrement", 0, {64, 1, 1}, 1, "w"},
    {"produce_counts", 1, {1, 1, 1}, 3, "w"},
    {"atomic_count", 1, {64, 1, 1}, 1, "w"},
    {"long_running", 1, {64, 1, 1}, 2, "w"},
    {"store_at", 1, {1, 1, 1}, 1, "w"},
    {"load_at", 1, {1, 1, 1}, 1, "rw"},
    {"store_read_only", 1, {1, 1, 1}, 0, "r"},
    {"sum3", 1, {64, 1, 1}, 1, "rrrw"},
};
constexpr size_t kExpectedCount = sizeof(kExpected) / sizeof(kExpected[0]);

void ExpectReflection(const std::vector<FunctionInfo>& functions) {
  ASSERT_EQ(functions.size(), kExpectedCount);
  for (size_t i = 0; i < kExpectedCount; ++i) {
    const Expected& e = kExpected[i];
    const FunctionInfo& f = functions[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(f.name, e.name);
    EXPECT_EQ(f.module_ordinal, e.module);
    EXPECT_EQ(f.workgroup_size[0], e.wg[0]);
    EXPECT_EQ(f.workgroup_size[1], e.wg[1]);
    EXPECT_EQ(f.workgroup_size[2], e.wg[2]);
    EXPECT_EQ(f.shared_memory_size, 0u);
    EXPECT_EQ(f.constant_count, e.constants);
    ASSERT_EQ(f.binding_count, std::strlen(e.bindings));
    ASSERT_EQ(f.binding_flags.size(), f.binding_count);
    for (uint32_t b = 0; b < f.binding_count; ++b) {
      EXPECT_EQ(f.binding_read_only(b), e.bindings[b] == 'r')
          << "binding " << b;
    }
  }
}

std::string Code(const Status& s) { return StatusCodeName(s.code()); }

class Executable : public CtsTest {
 protected:
  // Parses the produced file of `format` and checks everything the format
  // promises; skips when this build could not produce the format.
  void CheckFormat(ExecutableFormat format) {
    if (!TestKernelFormatProduced(format)) {
      GTEST_SKIP() << "this build did not produce "
                   << ExecutableFormatName(format)
                   << " (toolchain missing; see the CMake configure output)";
    }
    CTS_ASSERT_OK_AND_ASSIGN(Bytes bytes, ReadTestKernels(format));
    CTS_ASSERT_OK_AND_ASSIGN(ExecutableFormat identified,
                             IdentifyExecutableFormat(bytes));
    EXPECT_EQ(identified, format);
    CTS_ASSERT_OK_AND_ASSIGN(ExecutableData data, ParseExecutable(bytes));
    EXPECT_EQ(data.format, format);
    EXPECT_EQ(data.specialization_constant_count, 0u);
    ExpectReflection(data.functions);
    ASSERT_EQ(data.modules.size(), 2u);
    for (const ExecutableModule& m : data.modules) {
      ASSERT_GE(m.code.size(), 4u);
      std::string text(m.code.begin(), m.code.end());
      switch (format) {
        case ExecutableFormat::kSim:
        case ExecutableFormat::kHipHsaco:
        case ExecutableFormat::kAmdgpuCodeObject:
          EXPECT_EQ(std::memcmp(m.code.data(),
                                "\x7f"
                                "ELF",
                                4),
                    0);
          break;
        case ExecutableFormat::kCudaPtx:
          EXPECT_NE(text.find(".version"), std::string::npos);
          break;
        case ExecutableFormat::kLevelZeroSpirv: {
          uint32_t magic;
          std::memcpy(&magic, m.code.data(), 4);
          EXPECT_EQ(magic, 0x07230203u);
          break;
        }
        case ExecutableFormat::kMetalMsl:
          EXPECT_NE(text.find("#include <metal_stdlib>"), std::string::npos);
          break;
        default:
          break;
      }
      if (format == ExecutableFormat::kAmdgpuCodeObject) {
        EXPECT_EQ(m.isa, "amdgcn-amd-amdhsa--gfx90a");
      } else {
        EXPECT_EQ(m.isa, "");
      }
    }
    // Each export's entry point is present in its module's text formats.
    if (format == ExecutableFormat::kCudaPtx ||
        format == ExecutableFormat::kMetalMsl) {
      for (const FunctionInfo& f : data.functions) {
        const auto& code = data.modules[f.module_ordinal].code;
        std::string text(code.begin(), code.end());
        std::string want = format == ExecutableFormat::kCudaPtx
                               ? ".entry " + f.name + "("
                               : "kernel void " + f.name + "(";
        EXPECT_NE(text.find(want), std::string::npos) << want;
      }
    }
    // The file round-trips through the serializer bit for bit.
    EXPECT_EQ(SerializeExecutable(data), bytes);
  }

  // A valid sim-format file, built in memory (the modules are fake ELF
  // headers: fine for the parser, which never loads them).
  static ExecutableData ValidData() {
    ExecutableData d;
    d.format = ExecutableFormat::kSim;
    ExecutableModule m;
    m.code.assign(64, 0);
    std::memcpy(m.code.data(),
                "\x7f"
                "ELF\x02\x01",
                6);
    d.modules.push_back(m);
    d.modules.push_back(m);
    FunctionInfo a;
    a.name = "alpha";
    a.workgroup_size[0] = 8;
    a.constant_count = 2;
    a.binding_count = 2;
    a.binding_flags = {BindingFlags::kReadOnly, BindingFlags::kNone};
    FunctionInfo b = a;
    b.name = "beta";
    b.module_ordinal = 1;
    d.functions = {a, b};
    return d;
  }

  static void ExpectInvalid(const Bytes& bytes, const std::string& needle) {
    auto r = ParseExecutable(bytes);
    ASSERT_FALSE(r.ok()) << "expected INVALID_ARGUMENT mentioning '" << needle
                         << "'";
    EXPECT_EQ(Code(r.status()), "INVALID_ARGUMENT") << r.status().ToString();
    EXPECT_NE(r.status().message().find(needle), std::string::npos)
        << r.status().ToString();
  }
};

TEST_F(Executable, ReflectionSim) { CheckFormat(ExecutableFormat::kSim); }
TEST_F(Executable, ReflectionCudaPtx) {
  CheckFormat(ExecutableFormat::kCudaPtx);
}
TEST_F(Executable, ReflectionHipHsaco) {
  CheckFormat(ExecutableFormat::kHipHsaco);
}
TEST_F(Executable, ReflectionAmdgpuCodeObject) {
  CheckFormat(ExecutableFormat::kAmdgpuCodeObject);
}
TEST_F(Executable, ReflectionLevelZeroSpirv) {
  CheckFormat(ExecutableFormat::kLevelZeroSpirv);
}
TEST_F(Executable, ReflectionMetalMsl) {
  CheckFormat(ExecutableFormat::kMetalMsl);
}

TEST_F(Executable, FormatNamesRoundTrip) {
  for (ExecutableFormat f : kAllExecutableFormats) {
    CTS_ASSERT_OK_AND_ASSIGN(
        ExecutableFormat back,
        ParseExecutableFormatName(ExecutableFormatName(f)));
    EXPECT_EQ(back, f);
    ASSERT_NE(ExecutableFormatMagic(f), nullptr);
  }
  CTS_EXPECT_CODE(kInvalidArgument, ParseExecutableFormatName("vulkan"));
}

TEST_F(Executable, CacheCanPrepareAndReflects) {
  CTS_REQUIRE_TAG(kTagDispatch);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<ExecutableCache> cache,
                           device()->CreateExecutableCache());
  EXPECT_FALSE(cache->CanPrepareFormat(ExecutableFormat::kUnknown));
  int prepared = 0;
  for (ExecutableFormat format : ProducedTestKernelFormats()) {
    SCOPED_TRACE(ExecutableFormatName(format));
    CTS_ASSERT_OK_AND_ASSIGN(Bytes bytes, ReadTestKernels(format));
    ExecutableParams params;
    params.data = bytes;
    if (!cache->CanPrepareFormat(format)) {
      CTS_EXPECT_CODE(kInvalidArgument, cache->Prepare(params));
      continue;
    }
    CTS_ASSERT_OK_AND_ASSIGN(Ref<::hal::Executable> exe,
                             cache->Prepare(params));
    ++prepared;
    EXPECT_EQ(exe->format(), format);
    ASSERT_EQ(exe->function_count(), kExpectedCount);
    ExpectReflection(exe->functions());
    for (uint32_t i = 0; i < exe->function_count(); ++i) {
      CTS_ASSERT_OK_AND_ASSIGN(const FunctionInfo* f, exe->function(i));
      CTS_ASSERT_OK_AND_ASSIGN(uint32_t index, exe->LookupFunction(f->name));
      EXPECT_EQ(index, i);
    }
    CTS_EXPECT_CODE(kOutOfRange, exe->function(exe->function_count()));
    CTS_EXPECT_CODE(kOutOfRange, exe->function(~0u));
    CTS_EXPECT_CODE(kNotFound, exe->LookupFunction("no_such_kernel"));
    CTS_EXPECT_CODE(kNotFound, exe->LookupFunction(""));
    CTS_EXPECT_CODE(kNotFound, exe->LookupFunction("fil"));
    // An explicit format must match the header.
    params.format = format == ExecutableFormat::kSim
                        ? ExecutableFormat::kCudaPtx
                        : ExecutableFormat::kSim;
    CTS_EXPECT_CODE(kInvalidArgument, cache->Prepare(params));
    params.format = format;
    CTS_EXPECT_OK(cache->Prepare(params));
    // The test kernels declare no specialization constants.
    const uint32_t spec[] = {1};
    params.specialization_constants = spec;
    CTS_EXPECT_CODE(kInvalidArgument, cache->Prepare(params));
  }
  EXPECT_GT(prepared, 0) << "the device prepares none of the produced formats";
}

TEST_F(Executable, SimPrepareChecksCodeAgainstExportTable) {
  CTS_REQUIRE_TAG(kTagDispatch);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<ExecutableCache> cache,
                           device()->CreateExecutableCache());
  if (!cache->CanPrepareFormat(ExecutableFormat::kSim) ||
      !TestKernelFormatProduced(ExecutableFormat::kSim)) {
    GTEST_SKIP() << "device does not prepare sim executables";
  }
  CTS_ASSERT_OK_AND_ASSIGN(Bytes bytes,
                           ReadTestKernels(ExecutableFormat::kSim));
  CTS_ASSERT_OK_AND_ASSIGN(ExecutableData data, ParseExecutable(bytes));
  struct Case {
    const char* what;
    void (*mutate)(ExecutableData&);
    const char* code;
  };
  const Case cases[] = {
      {"constant count",
       [](ExecutableData& d) { d.functions[0].constant_count = 3; },
       "INVALID_ARGUMENT"},
      {"workgroup size",
       [](ExecutableData& d) { d.functions[0].workgroup_size[0] = 32; },
       "INVALID_ARGUMENT"},
      {"missing symbol",
       [](ExecutableData& d) { d.functions[0].name = "not_there"; },
       "INVALID_ARGUMENT"},
      {"wrong module",
       [](ExecutableData& d) { d.functions[0].module_ordinal = 1; },
       "INVALID_ARGUMENT"},
      {"shared memory",
       [](ExecutableData& d) { d.functions[0].shared_memory_size = 16; },
       "UNIMPLEMENTED"},
  };
  for (const Case& c : cases) {
    ExecutableData d = data;
    c.mutate(d);
    Bytes mutated = SerializeExecutable(d);
    CTS_ASSERT_OK(ParseExecutable(mutated));  // well-formed: the driver decides
    ExecutableParams params;
    params.data = mutated;
    auto r = cache->Prepare(params);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_EQ(Code(r.status()), c.code)
        << c.what << ": " << r.status().ToString();
  }
}

TEST_F(Executable, ValidFileParses) {
  Bytes bytes = SerializeExecutable(ValidData());
  CTS_ASSERT_OK_AND_ASSIGN(ExecutableData back, ParseExecutable(bytes));
  ASSERT_EQ(back.functions.size(), 2u);
  EXPECT_EQ(back.functions[1].name, "beta");
  EXPECT_EQ(back.functions[1].module_ordinal, 1u);
  EXPECT_TRUE(back.functions[0].binding_read_only(0));
  EXPECT_FALSE(back.functions[0].binding_read_only(1));
  // Parsing does not need aligned input.
  Bytes shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  CTS_EXPECT_OK(ParseExecutable(std::span<const uint8_t>(shifted).subspan(1)));
}

TEST_F(Executable, MalformedHeaderIsInvalidArgument) {
  Bytes good = SerializeExecutable(ValidData());
  ExpectInvalid({}, "shorter than its 16-byte header");
  ExpectInvalid(Bytes(good.begin(), good.begin() + 15), "shorter than");
  Bytes bad_magic = good;
  bad_magic[0] = 'X';
  ExpectInvalid(bad_magic, "magic");
  Bytes bad_version = good;
  bad_version[4] = 2;
  ExpectInvalid(bad_version, "version 2");
  Bytes bigger = good;
  bigger.push_back(0);  // one byte more than the header says
  ExpectInvalid(bigger, "header says");
  Bytes smaller_size = good;
  uint64_t total = good.size() + 8;
  std::memcpy(smaller_size.data() + 8, &total, 8);
  ExpectInvalid(smaller_size, "header says");
  // Truncated anywhere: the header size no longer matches.
  for (size_t n : {size_t{16}, size_t{24}, good.size() / 2, good.size() - 1}) {
    Bytes t(good.begin(), good.begin() + n);
    auto r = ParseExecutable(t);
    EXPECT_EQ(Code(r.status()), "INVALID_ARGUMENT") << n;
  }
  // Truncated with a matching header: the FlatBuffer fails verification.
  Bytes truncated(good.begin(), good.begin() + good.size() / 2);
  uint64_t n = truncated.size();
  std::memcpy(truncated.data() + 8, &n, 8);
  ExpectInvalid(truncated, "verification");
  // Another format's magic on a sim FlatBuffer: identifiers differ.
  Bytes relabeled = good;
  std::memcpy(relabeled.data(), "HPTX", 4);
  ExpectInvalid(relabeled, "verification");
}

TEST_F(Executable, CorruptFlatBufferIsInvalidArgument) {
  Bytes good = SerializeExecutable(ValidData());
  // Root offset pointing past the end.
  Bytes bad_root = good;
  uint32_t huge = 0x7FFFFFF0;
  std::memcpy(bad_root.data() + kExecutableHeaderSize, &huge, 4);
  ExpectInvalid(bad_root, "verification");
  // Every single-byte corruption of the FlatBuffer either still parses (the
  // byte was padding or a value) or is INVALID_ARGUMENT; nothing crashes.
  int invalid = 0;
  for (size_t i = kExecutableHeaderSize; i < good.size(); ++i) {
    for (uint8_t x : {uint8_t{0xFF}, uint8_t{0x80}, uint8_t{0x01}}) {
      Bytes b = good;
      b[i] ^= x;
      auto r = ParseExecutable(b);
      if (!r.ok()) {
        ++invalid;
        ASSERT_EQ(Code(r.status()), "INVALID_ARGUMENT")
            << "byte " << i << ": " << r.status().ToString();
      }
    }
  }
  EXPECT_GT(invalid, 0);
}

TEST_F(Executable, CrossReferencesAreChecked) {
  struct Case {
    const char* needle;
    void (*mutate)(ExecutableData&);
  };
  const Case cases[] = {
      {"module ordinal 2 is out of range",
       [](ExecutableData& d) { d.functions[1].module_ordinal = 2; }},
      {"has a zero entry",
       [](ExecutableData& d) { d.functions[0].workgroup_size[1] = 0; }},
      {"exceeds 1024 invocations",
       [](ExecutableData& d) {
         d.functions[0].workgroup_size[0] = 64;
         d.functions[0].workgroup_size[1] = 32;
       }},
      {"2 binding flags for 3 bindings",
       [](ExecutableData& d) { d.functions[0].binding_count = 3; }},
      {"unknown flag bits",
       [](ExecutableData& d) {
         d.functions[0].binding_flags[1] = static_cast<BindingFlags>(6);
       }},
      {"is not unique",
       [](ExecutableData& d) { d.functions[1].name = "alpha"; }},
      {"is not an identifier",
       [](ExecutableData& d) { d.functions[0].name = ""; }},
      {"is not an identifier",
       [](ExecutableData& d) { d.functions[0].name = "9lives"; }},
      {"is not an identifier",
       [](ExecutableData& d) { d.functions[0].name = "a b"; }},
      {"is not an identifier",
       [](ExecutableData& d) { d.functions[0].name = std::string(300, 'a'); }},
      {"constants exceed",
       [](ExecutableData& d) { d.functions[0].constant_count = 65; }},
      {"bindings exceed",
       [](ExecutableData& d) {
         d.functions[0].binding_count = 65;
         d.functions[0].binding_flags.resize(65);
       }},
      {"no exports", [](ExecutableData& d) { d.functions.clear(); }},
      {"no modules",
       [](ExecutableData& d) {
         d.modules.clear();
         d.functions.clear();
       }},
      {"not an ELF image",
       [](ExecutableData& d) { d.modules[0].code.assign(64, 0); }},
      {"not an ELF image",
       [](ExecutableData& d) { d.modules[1].code.clear(); }},
      {"specialization constants exceed",
       [](ExecutableData& d) { d.specialization_constant_count = 100000; }},
  };
  for (const Case& c : cases) {
    ExecutableData d = ValidData();
    c.mutate(d);
    SCOPED_TRACE(c.needle);
    ExpectInvalid(SerializeExecutable(d), c.needle);
  }
}

TEST_F(Executable, WorkgroupSizeNeedsThreeEntries) {
  // SerializeExecutable always writes 3 entries; build this one by hand.
  flatbuffers::FlatBufferBuilder b;
  std::vector<uint32_t> wg = {64, 1};
  std::vector<uint32_t> flags;
  auto exp = fb::CreateExportDefDirect(b, "k", 0, &wg, 0, 0, 0, &flags);
  std::vector<uint8_t> elf(64, 0);
  std::memcpy(elf.data(),
              "\x7f"
              "ELF\x02\x01",
              6);
  auto mod = fb::CreateSimModuleDefDirect(b, &elf);
  std::vector<flatbuffers::Offset<fb::ExportDef>> exports = {exp};
  std::vector<flatbuffers::Offset<fb::SimModuleDef>> modules = {mod};
  b.Finish(fb::CreateSimExecutableDefDirect(b, &exports, &modules, 0), "HSIM");
  Bytes bytes(kExecutableHeaderSize + b.GetSize());
  uint32_t version = kExecutableFileVersion;
  uint64_t total = bytes.size();
  std::memcpy(bytes.data(), "HSIM", 4);
  std::memcpy(bytes.data() + 4, &version, 4);
  std::memcpy(bytes.data() + 8, &total, 8);
  std::memcpy(bytes.data() + kExecutableHeaderSize, b.GetBufferPointer(),
              b.GetSize());
  ExpectInvalid(bytes, "workgroup size has 2 entries");
}

TEST_F(Executable, FormatSpecificModuleChecks) {
  // PTX must define every export of the module as an .entry.
  ExecutableData ptx;
  ptx.format = ExecutableFormat::kCudaPtx;
  ExecutableModule m;
  std::string text = ".version 7.0\n.entry alpha(\n.param .u32 p)\n{ ret; }\n";
  m.code.assign(text.begin(), text.end());
  ptx.modules.push_back(m);
  FunctionInfo f;
  f.name = "alpha";
  ptx.functions.push_back(f);
  CTS_EXPECT_OK(ParseExecutable(SerializeExecutable(ptx)));
  ptx.functions[0].name = "alph";  // a prefix of an entry is not an entry
  ExpectInvalid(SerializeExecutable(ptx), "no '.entry alph'");
  // SPIR-V needs its magic number.
  ExecutableData spv;
  spv.format = ExecutableFormat::kLevelZeroSpirv;
  m.code.assign(20, 0);
  spv.modules.push_back(m);
  spv.functions.push_back(f);
  ExpectInvalid(SerializeExecutable(spv), "SPIR-V");
  // HSACO must be an AMDGPU ELF; the AMDGPU format also needs an ISA name.
  ExecutableData hip;
  hip.format = ExecutableFormat::kHipHsaco;
  m.code.assign(64, 0);
  std::memcpy(m.code.data(),
              "\x7f"
              "ELF\x02\x01",
              6);
  m.code[18] = 62;  // EM_X86_64
  hip.modules.push_back(m);
  hip.functions.push_back(f);
  ExpectInvalid(SerializeExecutable(hip), "ELF machine 62, expected 224");
  ExecutableData amd = hip;
  amd.format = ExecutableFormat::kAmdgpuCodeObject;
  amd.modules[0].code[18] = 224;
  ExpectInvalid(SerializeExecutable(amd), "ISA name");
  amd.modules[0].isa = "amdgcn-amd-amdhsa--gfx90a";
  CTS_EXPECT_OK(ParseExecutable(SerializeExecutable(amd)));
  // MSL source must not be empty.
  ExecutableData msl;
  msl.format = ExecutableFormat::kMetalMsl;
  m.code.clear();
  msl.modules.push_back(m);
  msl.functions.push_back(f);
  ExpectInvalid(SerializeExecutable(msl), "MSL source is empty");
}

TEST_F(Executable, MutatedProducedFilesNeverCrash) {
  // Truncations and byte flips of every produced file: each parse is OK or
  // INVALID_ARGUMENT. (The fuzzer explores further; this runs everywhere.)
  for (ExecutableFormat format : ProducedTestKernelFormats()) {
    SCOPED_TRACE(ExecutableFormatName(format));
    CTS_ASSERT_OK_AND_ASSIGN(Bytes good, ReadTestKernels(format));
    for (size_t n = 0; n < good.size(); n += 1 + n / 8) {
      Bytes t(good.begin(), good.begin() + n);
      uint64_t size = n;
      if (n >= 16)
        std::memcpy(t.data() + 8, &size, 8);  // defeat the size check
      auto r = ParseExecutable(t);
      // Only trailing alignment padding may go without notice.
      if (n + 8 < good.size()) {
        ASSERT_FALSE(r.ok()) << "truncated to " << n;
      }
      if (!r.ok()) {
        ASSERT_EQ(Code(r.status()), "INVALID_ARGUMENT")
            << r.status().ToString();
      }
    }
    uint32_t rng = 12345;
    for (int i = 0; i < 2000; ++i) {
      rng = rng * 1664525u + 1013904223u;
      Bytes b = good;
      size_t at =
          kExecutableHeaderSize + rng % (good.size() - kExecutableHeaderSize);
      b[at] ^= static_cast<uint8_t>(1u << (rng >> 29));
      auto r = ParseExecutable(b);
      if (!r.ok()) {
        ASSERT_EQ(Code(r.status()), "INVALID_ARGUMENT")
            << r.status().ToString();
      }
    }
  }
}

}  // namespace
}  // namespace hal::cts
