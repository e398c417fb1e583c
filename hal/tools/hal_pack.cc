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
//   export NAME module=N workgroup=X,Y,Z constants=N bindings=r,w,...
//   [shared=B]
//
// The written file is parsed back with hal::ParseExecutable, so hal-pack
// never writes a file the loader would reject. A regular output file is
// written to OUTPUT.tmp and renamed over OUTPUT (readers never see half a
// file); an output that exists and is not a regular file (/dev/stdout, a
// FIFO, a device) is opened and written in place, never replaced. Exit
// status: 0 on success, 1 on any error, 2 for bad arguments (printed to
// stderr); `hal-pack --help` prints the options.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

constexpr char kHelp[] =
    R"(usage: hal-pack --format=FORMAT --manifest=FILE --output=FILE
                [--isa=NAME] [--specialization-constants=N] MODULE...

Writes an executable file (hal/executable.h) from a manifest and compiled
modules, and verifies it by parsing it back.

  --format=FORMAT     sim, cuda-ptx, hip-hsaco, amdgpu-code-object,
                      level-zero-spirv or metal-msl (required)
  --manifest=FILE     one export per line (required):
                        export NAME module=N workgroup=X,Y,Z constants=N
                               bindings=r,w,... [shared=B]
                      (bindings=- for none; '#' starts a comment)
  --output=FILE       where to write (required). A regular file (or a new
                      one) is written to FILE.tmp and renamed over FILE; an
                      existing non-regular file (/dev/stdout, a FIFO, a
                      device) is written in place and never replaced.
  --isa=NAME          the target ISA; required for amdgpu-code-object
                      (default: none)
  --specialization-constants=N
                      specialization constants of the executable (default: 0)
  MODULE...           the compiled modules in ordinal order (required)
  --help, -h          this text

Exit status: 0 written; 1 an error reading, verifying or writing; 2 bad
arguments.
)";

// A usage error (exit status 2), as opposed to a failure to pack (1).
bool g_usage_error = false;

hal::Status UsageError(hal::Status s) {
  g_usage_error = true;
  return s;
}

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
    if (auto hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    std::istringstream words(line);
    std::string keyword;
    if (!(words >> keyword)) continue;
    if (keyword != "export") {
      return hal::InvalidArgumentError("%s: expected 'export', got '%s'",
                                       where.c_str(), keyword.c_str());
    }
    FunctionInfo f;
    if (!(words >> f.name)) {
      return hal::InvalidArgumentError("%s: export needs a name",
                                       where.c_str());
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

Status WriteOutput(const std::string& output,
                   const std::vector<uint8_t>& bytes);

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
      HAL_ASSIGN_OR_RETURN(specialization_constants,
                           ParseU32(v, "--specialization-constants"));
    } else if (arg.rfind("--", 0) == 0) {
      return UsageError(hal::InvalidArgumentError(
          "unknown flag '%s' (hal-pack --help lists them)", arg.c_str()));
    } else {
      modules.push_back(arg);
    }
  }
  if (format_name.empty() || manifest.empty() || output.empty() ||
      modules.empty()) {
    return UsageError(hal::InvalidArgumentError(
        "usage: hal-pack --format=FORMAT --manifest=FILE --output=FILE "
        "[--isa=NAME] [--specialization-constants=N] MODULE... (--help)"));
  }
  ExecutableData data;
  auto format = hal::ParseExecutableFormatName(format_name);
  if (!format.ok()) return UsageError(format.status());
  data.format = *format;
  data.specialization_constant_count = specialization_constants;
  HAL_ASSIGN_OR_RETURN(data.functions, ParseManifest(manifest));
  if (data.format == hal::ExecutableFormat::kAmdgpuCodeObject && isa.empty()) {
    return UsageError(
        hal::InvalidArgumentError("amdgpu-code-object needs --isa="));
  }
  for (const std::string& path : modules) {
    hal::ExecutableModule m;
    HAL_ASSIGN_OR_RETURN(m.code, ReadFile(path));
    if (data.format == hal::ExecutableFormat::kLevelZeroSpirv &&
        m.code.size() % 4) {
      return hal::InvalidArgumentError(
          "'%s': SPIR-V size %zu is not a multiple of 4", path.c_str(),
          m.code.size());
    }
    m.isa = isa;
    data.modules.push_back(std::move(m));
  }
  std::vector<uint8_t> bytes = hal::SerializeExecutable(data);
  auto parsed = hal::ParseExecutable(bytes);
  if (!parsed.ok())
    return parsed.status().Annotate("the packed file does not verify");

  return WriteOutput(output, bytes);
}

// Writes all of `bytes` to `fd`.
Status WriteAll(int fd, const std::vector<uint8_t>& bytes,
                const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return hal::InternalError("writing '%s' failed: %s", path.c_str(),
                                n < 0 ? std::strerror(errno) : "no progress");
    }
    done += static_cast<size_t>(n);
  }
  return hal::OkStatus();
}

Status WriteOutput(const std::string& output,
                   const std::vector<uint8_t>& bytes) {
  struct stat st;
  if (stat(output.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // Renaming a temporary file over /dev/null (or a FIFO, or a device)
    // would replace the special file itself; write into it instead.
    if (S_ISDIR(st.st_mode)) {
      return hal::InvalidArgumentError("--output '%s' is a directory",
                                       output.c_str());
    }
    int fd = open(output.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      return hal::InternalError("opening '%s' failed: %s", output.c_str(),
                                std::strerror(errno));
    }
    Status s = WriteAll(fd, bytes, output);
    if (close(fd) != 0 && s.ok()) {
      s = hal::InternalError("closing '%s' failed: %s", output.c_str(),
                             std::strerror(errno));
    }
    return s;
  }
  std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      return hal::InternalError("writing '%s' failed", tmp.c_str());
    }
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    std::remove(tmp.c_str());
    return hal::InternalError("renaming '%s' to '%s' failed: %s", tmp.c_str(),
                              output.c_str(), std::strerror(errno));
  }
  return hal::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 ||
        std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kHelp, stdout);
      return 0;
    }
  }
  Status s = Run(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "hal-pack: %s\n", s.ToString().c_str());
    return g_usage_error ? 2 : 1;
  }
  return 0;
}
