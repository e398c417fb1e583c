#include "sim/engine/engine_amdgpu_elf.h"

#include <cstring>

#include "hal/formats/elf_reader.h"

namespace hal::sim::engine {

namespace {

bool Fail(AmdgpuCodeObjectError kind, std::string message,
          AmdgpuCodeObjectError* kind_out, std::string* error) {
  if (kind_out) *kind_out = kind;
  *error = std::move(message);
  return false;
}

}  // namespace

bool ParseAmdgpuCodeObject(const uint8_t* image, size_t size,
                           std::vector<AmdgpuKernelDescriptor>* out,
                           std::string* error, AmdgpuCodeObjectError* kind) {
  namespace formats = hal::formats;
  using Error = AmdgpuCodeObjectError;
  out->clear();
  if (kind) *kind = Error::kNone;
  if (!image || (size && size < formats::kElf64HeaderSize)) {
    return Fail(Error::kNotAmdgpu, "shorter than an ELF header", kind, error);
  }
  formats::ElfHeader eh;
  if (formats::ReadElfHeader({image, size ? size : formats::kElf64HeaderSize},
                             &eh) != formats::ElfError::kOk ||
      eh.machine != formats::kElfMachineAmdgpu) {
    return Fail(
        Error::kNotAmdgpu,
        "not an AMDGPU code object (a 64-bit little-endian EM_AMDGPU ELF)",
        kind, error);
  }
  if ((eh.flags & 0xff) != kAmdgpuGfx90aMach) {
    return Fail(Error::kWrongMachine,
                "the code object is for AMDGPU machine " +
                    std::to_string(eh.flags & 0xff) +
                    "; the simulated agents are gfx90a (63)",
                kind, error);
  }
  if (eh.shentsize != formats::kElf64SectionHeaderSize || eh.shnum == 0 ||
      eh.shoff < formats::kElf64HeaderSize) {
    return Fail(Error::kMalformed, "malformed section header table", kind,
                error);
  }
  // lld writes the section headers last: without a size they end the image.
  const uint64_t table_end =
      eh.shoff + uint64_t{eh.shnum} * formats::kElf64SectionHeaderSize;
  if (table_end < eh.shoff || (size && table_end > size)) {
    return Fail(Error::kMalformed, "section header table outside the image",
                kind, error);
  }
  if (!size) size = static_cast<size_t>(table_end);
  formats::ElfImage elf;
  if (formats::ElfImage::Open({image, size}, &elf) != formats::ElfError::kOk) {
    return Fail(Error::kMalformed, "section header table outside the image",
                kind, error);
  }
  const std::vector<formats::ElfSection>& sections = elf.sections();
  std::vector<formats::ElfSymbol> symbols;
  for (const formats::ElfSection& sh : sections) {
    if (sh.type != formats::kElfSectionSymtab &&
        sh.type != formats::kElfSectionDynsym) {
      continue;
    }
    switch (elf.ReadSymbols(sh, &symbols)) {
      case formats::ElfError::kOk:
        break;
      case formats::ElfError::kBadSymbolTable:
        return Fail(Error::kMalformed, "malformed symbol table", kind, error);
      default:
        return Fail(Error::kMalformed, "symbol table outside the image", kind,
                    error);
    }
    for (const formats::ElfSymbol& sym : symbols) {
      // The name is empty when outside its string table or unterminated.
      const std::string_view name = sym.name;
      if (sym.type() != formats::kElfSymbolObject || sym.size != 64 ||
          sym.shndx >= sections.size() || name.size() <= 3 ||
          !name.ends_with(".kd")) {
        continue;
      }
      const formats::ElfSection& holder = sections[sym.shndx];
      std::optional<std::span<const uint8_t>> kd;
      if (holder.size >= 64 && sym.value >= holder.addr &&
          sym.value - holder.addr <= holder.size - 64) {
        kd = elf.Bytes(holder.offset + (sym.value - holder.addr), 64);
      }
      if (!kd) {
        return Fail(
            Error::kMalformed,
            "kernel descriptor '" + std::string(name) + "' outside its section",
            kind, error);
      }
      // A symbol seen in both .symtab and .dynsym is one kernel.
      std::string kernel(name.substr(0, name.size() - 3));
      bool seen = false;
      for (const AmdgpuKernelDescriptor& d : *out) seen |= d.name == kernel;
      if (seen) continue;
      AmdgpuKernelDescriptor d;
      d.name = std::move(kernel);
      std::memcpy(&d.group_segment_size, kd->data() + 0, 4);
      std::memcpy(&d.private_segment_size, kd->data() + 4, 4);
      std::memcpy(&d.kernarg_size, kd->data() + 8, 4);
      out->push_back(std::move(d));
    }
  }
  if (out->empty()) {
    return Fail(Error::kNoKernels,
                "the code object has no kernel descriptors (NAME.kd symbols)",
                kind, error);
  }
  return true;
}

}  // namespace hal::sim::engine
