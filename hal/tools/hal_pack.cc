// hal-pack: writes an executable file from a manifest and compiled modules.
//
//   hal-pack --format=FORMAT --manifest=FILE --output=FILE [--isa=NAME]
//            [--specialization-constants=N] MODULE...
//
// FORMAT is an ExecutableFormatName (sim, cuda-ptx, hip-hsaco,
// amdgpu-code-object, level-zero-spirv, metal-msl). MODULEs are the compiled
// modules in ordinal order (ELF shared objects, PTX text, HSACO, SPIR-V
// binaries, MSL text). --isa is required for amdgpu-code-object. The manifest
// has one export per line (see hal/cts/kernels/test_kernels.manifest):
//
//   export NAME module=N workgroup=X,Y,Z constants=N bindings=r,w,... [shared=B]
//
// The written file is parsed back with hal::ParseExecutable, so hal-pack
// never writes a file the loader would reject. Exit status: 0 on success, 1
// on any error (printed to stderr).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "hal/executable.h"

namespace {

using hal::BindingFlags;
using hal::ExecutableData;
using hal::FunctionInfo;
using hal::Status;
using hal::StatusOr;

StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return hal::NotFoundError("cannot open '%s'", path.c_str());
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  return bytes;
}

StatusOr<uint32_t> ParseU32(const std::string& s, const std::string& where) {
  char* end = nullptr;
  unsigned long v = std::strtoul(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v > 0xFFFFFFFFul) {
    return hal::InvalidArgumentError("%s: '%s' is not a uint32", where.c_str(),
                                     s.c_str());
  }
  return static_cast<uint32_t>(v);
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

StatusOr<std::vector<FunctionInfo>> ParseManifest(const std::string& path) {
  std::ifstream in(path);
  if (!in) return hal::NotFoundError("cannot open manifest '%s'", path.c_str());
  std::vector<FunctionInfo> functions;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    std::string where = path + ":" + std::to_string(line_no);
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string keyword;
    if (!(words >> keyword)) continue;
    if (keyword != "export") {
      return hal::InvalidArgumentError("%s: expected 'export', got '%s'",
                                       where.c_str(), keyword.c_str());
    }
    FunctionInfo f;
    if (!(words >> f.name)) {
      return hal::InvalidArgumentError("%s: export needs a name", where.c_str());
    }
    bool have_module = false, have_wg = false, have_constants = false,
         have_bindings = false;
    for (std::string kv; words >> kv;) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) {
        return hal::InvalidArgumentError("%s: '%s' is not key=value",
                                         where.c_str(), kv.c_str());
      }
      std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
      if (key == "module") {
        HAL_ASSIGN_OR_RETURN(f.module_ordinal, ParseU32(value, where));
        have_module = true;
      } else if (key == "workgroup") {
        auto parts = Split(value, ',');
        if (parts.size() != 3) {
          return hal::InvalidArgumentError("%s: workgroup needs X,Y,Z",
                                           where.c_str());
        }
        for (int i = 0; i < 3; ++i) {
          HAL_ASSIGN_OR_RETURN(f.workgroup_size[i], ParseU32(parts[i], where));
        }
        have_wg = true;
      } else if (key == "constants") {
        HAL_ASSIGN_OR_RETURN(f.constant_count, ParseU32(value, where));
        have_constants = true;
      } else if (key == "bindings") {
        if (value != "-") {
          for (const std::string& flag : Split(value, ',')) {
            if (flag == "r") {
              f.binding_flags.push_back(BindingFlags::kReadOnly);
            } else if (flag == "w") {
              f.binding_flags.push_back(BindingFlags::kNone);
            } else {
              return hal::InvalidArgumentError(
                  "%s: binding flag '%s' is not r or w", where.c_str(),
                  flag.c_str());
            }
          }
        }
        f.binding_count = static_cast<uint32_t>(f.binding_flags.size());
        have_bindings = true;
      } else if (key == "shared") {
        HAL_ASSIGN_OR_RETURN(f.shared_memory_size, ParseU32(value, where));
      } else {
        return hal::InvalidArgumentError("%s: unknown key '%s'", where.c_str(),
                                         key.c_str());
      }
    }
    if (!have_module || !have_wg || !have_constants || !have_bindings) {
      return hal::InvalidArgumentError(
          "%s: export %s needs module=, workgroup=, constants= and bindings=",
          where.c_str(), f.name.c_str());
    }
    functions.push_back(std::move(f));
  }
  return functions;
}

Status Run(int argc, char** argv) {
  std::string format_name, manifest, output, isa;
  uint32_t specialization_constants = 0;
  std::vector<std::string> modules;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--format=")) {
      format_name = v;
    } else if (const char* v = value("--manifest=")) {
      manifest = v;
    } else if (const char* v = value("--output=")) {
      output = v;
    } else if (const char* v = value("--isa=")) {
      isa = v;
    } else if (const char* v = value("--specialization-constants=")) {
      HAL_ASSIGN_OR_RETURN(specialization_constants, ParseU32(v, "--specialization-constants"));
    } else if (arg.rfind("--", 0) == 0) {
      return hal::InvalidArgumentError("unknown flag '%s'", arg.c_str());
    } else {
      modules.push_back(arg);
    }
  }
  if (format_name.empty() || manifest.empty() || output.empty() || modules.empty()) {
    return hal::InvalidArgumentError(
        "usage: hal-pack --format=FORMAT --manifest=FILE --output=FILE "
        "[--isa=NAME] [--specialization-constants=N] MODULE...");
  }
  ExecutableData data;
  HAL_ASSIGN_OR_RETURN(data.format, hal::ParseExecutableFormatName(format_name));
  data.specialization_constant_count = specialization_constants;
  HAL_ASSIGN_OR_RETURN(data.functions, ParseManifest(manifest));
  if (data.format == hal::ExecutableFormat::kAmdgpuCodeObject && isa.empty()) {
    return hal::InvalidArgumentError("amdgpu-code-object needs --isa=");
  }
  for (const std::string& path : modules) {
    hal::ExecutableModule m;
    HAL_ASSIGN_OR_RETURN(m.code, ReadFile(path));
    if (data.format == hal::ExecutableFormat::kLevelZeroSpirv && m.code.size() % 4) {
      return hal::InvalidArgumentError("'%s': SPIR-V size %zu is not a multiple of 4",
                                       path.c_str(), m.code.size());
    }
    m.isa = isa;
    data.modules.push_back(std::move(m));
  }
  std::vector<uint8_t> bytes = hal::SerializeExecutable(data);
  auto parsed = hal::ParseExecutable(bytes);
  if (!parsed.ok()) return parsed.status().Annotate("the packed file does not verify");

  std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) return hal::InternalError("writing '%s' failed", tmp.c_str());
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    return hal::InternalError("renaming '%s' to '%s' failed", tmp.c_str(),
                              output.c_str());
  }
  return hal::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Status s = Run(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "hal-pack: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
