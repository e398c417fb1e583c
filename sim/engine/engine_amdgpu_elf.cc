#include "sim/engine/engine_amdgpu_elf.h"

#include <elf.h>

#include <cstring>

namespace hal::sim::engine {

namespace {

// The bytes [offset, offset + n) of the image, or null when outside it.
const uint8_t* At(const uint8_t* image, size_t image_size, uint64_t offset,
                  uint64_t n) {
  if (offset > image_size || n > image_size - offset) return nullptr;
  return image + offset;
}

}  // namespace

bool ParseAmdgpuCodeObject(const uint8_t* image, size_t size,
                           std::vector<AmdgpuKernelDescriptor>* out,
                           std::string* error) {
  out->clear();
  Elf64_Ehdr eh;
  if (!image || (size && size < sizeof(eh))) {
    *error = "shorter than an ELF header";
    return false;
  }
  std::memcpy(&eh, image, sizeof(eh));
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_AMDGPU) {
    *error = "not an AMDGPU code object (a 64-bit little-endian EM_AMDGPU ELF)";
    return false;
  }
  if ((eh.e_flags & 0xff) != kAmdgpuGfx90aMach) {
    *error = "the code object is for AMDGPU machine " +
             std::to_string(eh.e_flags & 0xff) +
             "; the simulated agents are gfx90a (63)";
    return false;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
      eh.e_shoff < sizeof(eh)) {
    *error = "malformed section header table";
    return false;
  }
  // lld writes the section headers last: without a size they end the image.
  const uint64_t table_end =
      eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr);
  if (table_end < eh.e_shoff || (size && table_end > size)) {
    *error = "section header table outside the image";
    return false;
  }
  if (!size) size = static_cast<size_t>(table_end);
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), image + eh.e_shoff,
              sections.size() * sizeof(Elf64_Shdr));
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_link >= sections.size() || sh.sh_entsize != sizeof(Elf64_Sym)) {
      *error = "malformed symbol table";
      return false;
    }
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    const uint8_t* syms = At(image, size, sh.sh_offset, sh.sh_size);
    const uint8_t* strs = At(image, size, strtab.sh_offset, strtab.sh_size);
    if (!syms || !strs) {
      *error = "symbol table outside the image";
      return false;
    }
    for (uint64_t i = 0; i < sh.sh_size / sizeof(Elf64_Sym); ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, syms + i * sizeof(Elf64_Sym), sizeof(sym));
      if (ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_size != 64 ||
          sym.st_name >= strtab.sh_size || sym.st_shndx >= sections.size()) {
        continue;
      }
      const char* name = reinterpret_cast<const char*>(strs) + sym.st_name;
      const size_t len = strnlen(name, strtab.sh_size - sym.st_name);
      if (len <= 3 || len == strtab.sh_size - sym.st_name ||
          std::strcmp(name + len - 3, ".kd") != 0) {
        continue;
      }
      const Elf64_Shdr& holder = sections[sym.st_shndx];
      const uint8_t* kd =
          holder.sh_size >= 64 && sym.st_value >= holder.sh_addr &&
                  sym.st_value - holder.sh_addr <= holder.sh_size - 64
              ? At(image, size,
                   holder.sh_offset + (sym.st_value - holder.sh_addr), 64)
              : nullptr;
      if (!kd) {
        *error = "kernel descriptor '" + std::string(name, len) +
                 "' outside its section";
        return false;
      }
      // A symbol seen in both .symtab and .dynsym is one kernel.
      std::string kernel(name, len - 3);
      bool seen = false;
      for (const AmdgpuKernelDescriptor& d : *out) seen |= d.name == kernel;
      if (seen) continue;
      AmdgpuKernelDescriptor d;
      d.name = std::move(kernel);
      std::memcpy(&d.group_segment_size, kd + 0, 4);
      std::memcpy(&d.private_segment_size, kd + 4, 4);
      std::memcpy(&d.kernarg_size, kd + 8, 4);
      out->push_back(std::move(d));
    }
  }
  if (out->empty()) {
    *error = "the code object has no kernel descriptors (NAME.kd symbols)";
    return false;
  }
  return true;
}

}  // namespace hal::sim::engine
