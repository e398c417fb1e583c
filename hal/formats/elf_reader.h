// ELF64 little-endian images (AMDGPU code objects, sim-format modules),
// read in place. The one ELF walker of the tree: the HAL's executable
// checks (hal/executable.cc), the AMDGPU driver's metadata reader
// (drivers/amdgpu/amdgpu_code_object.cc) and the simulated HSA and HIP
// libraries (sim/engine/engine_amdgpu_elf.cc) read through it.
//
// The input is untrusted: every read is bounded by the image given, and a
// malformed image is an ElfError, never a crash. The reader says what is
// wrong; each caller words its own message (they are part of its contract).
// No allocation but the section and symbol lists; no global state, so any
// thread may call any function on images it owns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace hal::formats {

// The numbers the callers use, with their <elf.h> names (<elf.h> is not on
// every host the HAL builds on).
inline constexpr uint16_t kElfMachineAmdgpu = 224;     // EM_AMDGPU
inline constexpr uint32_t kElfSectionSymtab = 2;       // SHT_SYMTAB
inline constexpr uint32_t kElfSectionNote = 7;         // SHT_NOTE
inline constexpr uint32_t kElfSectionDynsym = 11;      // SHT_DYNSYM
inline constexpr uint8_t kElfSymbolObject = 1;         // STT_OBJECT
inline constexpr size_t kElf64HeaderSize = 64;         // sizeof(Elf64_Ehdr)
inline constexpr size_t kElf64SectionHeaderSize = 64;  // sizeof(Elf64_Shdr)
inline constexpr size_t kElf64SymbolSize = 24;         // sizeof(Elf64_Sym)

enum class ElfError {
  kOk = 0,
  kTooShort,             // fewer bytes than the 64-byte ELF64 header
  kNotElf,               // no "\x7f" "ELF" magic
  kNotElf64Lsb,          // not ELFCLASS64 with ELFDATA2LSB
  kBadSectionTable,      // e_shentsize is not 64
  kSectionTableOutside,  // the section header table is not in the image
  kBadSymbolTable,       // sh_link names no section, or sh_entsize is not 24
  kSymbolTableOutside,   // the symbols or their strings are not in the image
  kNotesOutside,         // a note section is not in the image
};

// The fields of the ELF64 header the callers read (e_ident checked).
struct ElfHeader {
  uint16_t type = 0;     // e_type
  uint16_t machine = 0;  // e_machine
  uint32_t flags = 0;    // e_flags (AMDGPU: the machine in bits 0-7)
  uint64_t shoff = 0;    // e_shoff
  uint16_t shentsize = 0;
  uint16_t shnum = 0;
  uint16_t shstrndx = 0;
};

// An Elf64_Shdr.
struct ElfSection {
  uint32_t name = 0;  // offset in the section-name table
  uint32_t type = 0;
  uint64_t flags = 0;
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t addralign = 0;
  uint64_t entsize = 0;
};

// An Elf64_Sym, with its name resolved in the table's string section.
struct ElfSymbol {
  // Up to its NUL; empty when st_name is outside the string section or the
  // name is not terminated inside it. Points into the image.
  std::string_view name;
  uint8_t info = 0;  // st_info
  uint16_t shndx = 0;
  uint64_t value = 0;
  uint64_t size = 0;

  uint8_t type() const { return info & 0xf; }  // ELF64_ST_TYPE
};

// One note of a note section. Both spans point into the image.
struct ElfNote {
  uint32_t type = 0;
  std::span<const uint8_t> name;  // n_namesz bytes (the NUL included)
  std::span<const uint8_t> desc;  // n_descsz bytes
};

// The bytes [offset, offset + size) of `image`, or nullopt when they are
// not all inside it (no overflow for any offset and size).
std::optional<std::span<const uint8_t>> ElfBytes(std::span<const uint8_t> image,
                                                 uint64_t offset,
                                                 uint64_t size);

// Reads the header at the start of `image`: kTooShort, kNotElf or
// kNotElf64Lsb, in that order of checks. Reads the first 64 bytes only, so
// a loader that is given no image size (hipModuleLoadDataEx) may pass a
// 64-byte span to learn where the image ends.
ElfError ReadElfHeader(std::span<const uint8_t> image, ElfHeader* out);

// An image whose header and section header table were read. It refers to
// the bytes given to Open, which must outlive it and not change.
class ElfImage {
 public:
  // ReadElfHeader's errors, then kBadSectionTable when e_shentsize is not
  // 64, then kSectionTableOutside when the section header table does not
  // lie inside `image`. An image without sections (e_shnum 0) opens.
  static ElfError Open(std::span<const uint8_t> image, ElfImage* out);

  std::span<const uint8_t> bytes() const { return image_; }
  const ElfHeader& header() const { return header_; }
  const std::vector<ElfSection>& sections() const { return sections_; }

  // ElfBytes of this image.
  std::optional<std::span<const uint8_t>> Bytes(uint64_t offset,
                                                uint64_t size) const {
    return ElfBytes(image_, offset, size);
  }
  // A section's contents, or nullopt when they are not inside the image.
  std::optional<std::span<const uint8_t>> SectionBytes(
      const ElfSection& section) const {
    return Bytes(section.offset, section.size);
  }

  // The first section named `name` in the section-name table (e_shstrndx),
  // or null when there is none or the table is not readable.
  const ElfSection* FindSection(std::string_view name) const;

  // The symbols of a SHT_SYMTAB or SHT_DYNSYM section, in order (index 0,
  // the null symbol, included): kBadSymbolTable when its sh_link names no
  // section or its sh_entsize is not 24, kSymbolTableOutside when its
  // symbols or its string section are not inside the image. A trailing
  // partial entry is ignored.
  ElfError ReadSymbols(const ElfSection& table,
                       std::vector<ElfSymbol>* out) const;

  // The notes of a note section, in order: kNotesOutside when the section
  // is not inside the image. The list ends at the first note that does not
  // fit in what is left of the section (a truncated note is not an error).
  ElfError ReadNotes(const ElfSection& section,
                     std::vector<ElfNote>* out) const;

 private:
  std::span<const uint8_t> image_;
  ElfHeader header_;
  std::vector<ElfSection> sections_;
};

}  // namespace hal::formats
