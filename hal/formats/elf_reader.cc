#include "hal/formats/elf_reader.h"

#include <cstring>

namespace hal::formats {

namespace {

// Little-endian loads; the image carries no alignment promise.
uint16_t U16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }
uint32_t U32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}
uint64_t U64(const uint8_t* p) {
  return uint64_t{U32(p)} | uint64_t{U32(p + 4)} << 32;
}

ElfSection ReadSection(const uint8_t* p) {
  ElfSection s;
  s.name = U32(p + 0);
  s.type = U32(p + 4);
  s.flags = U64(p + 8);
  s.addr = U64(p + 16);
  s.offset = U64(p + 24);
  s.size = U64(p + 32);
  s.link = U32(p + 40);
  s.info = U32(p + 44);
  s.addralign = U64(p + 48);
  s.entsize = U64(p + 56);
  return s;
}

// The NUL-terminated string at `offset` of a string section; empty when
// outside it or not terminated inside it.
std::string_view StringAt(std::span<const uint8_t> strings, uint64_t offset) {
  if (offset >= strings.size()) return {};
  const char* s = reinterpret_cast<const char*>(strings.data()) + offset;
  const size_t max = strings.size() - offset;
  const size_t len = strnlen(s, max);
  if (len == max) return {};
  return std::string_view(s, len);
}

}  // namespace

std::optional<std::span<const uint8_t>> ElfBytes(std::span<const uint8_t> image,
                                                 uint64_t offset,
                                                 uint64_t size) {
  if (offset > image.size() || size > image.size() - offset) {
    return std::nullopt;
  }
  return image.subspan(offset, size);
}

ElfError ReadElfHeader(std::span<const uint8_t> image, ElfHeader* out) {
  if (image.size() < kElf64HeaderSize) return ElfError::kTooShort;
  const uint8_t* p = image.data();
  if (std::memcmp(p,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return ElfError::kNotElf;
  // e_ident[EI_CLASS] == ELFCLASS64, e_ident[EI_DATA] == ELFDATA2LSB.
  if (p[4] != 2 || p[5] != 1) return ElfError::kNotElf64Lsb;
  out->type = U16(p + 16);
  out->machine = U16(p + 18);
  out->flags = U32(p + 48);
  out->shoff = U64(p + 40);
  out->shentsize = U16(p + 58);
  out->shnum = U16(p + 60);
  out->shstrndx = U16(p + 62);
  return ElfError::kOk;
}

ElfError ElfImage::Open(std::span<const uint8_t> image, ElfImage* out) {
  ElfHeader h;
  if (ElfError e = ReadElfHeader(image, &h); e != ElfError::kOk) return e;
  if (h.shentsize != kElf64SectionHeaderSize) {
    return ElfError::kBadSectionTable;
  }
  std::optional<std::span<const uint8_t>> table =
      ElfBytes(image, h.shoff, uint64_t{h.shnum} * kElf64SectionHeaderSize);
  if (!table) return ElfError::kSectionTableOutside;
  out->image_ = image;
  out->header_ = h;
  out->sections_.clear();
  out->sections_.reserve(h.shnum);
  for (uint32_t i = 0; i < h.shnum; ++i) {
    out->sections_.push_back(
        ReadSection(table->data() + i * kElf64SectionHeaderSize));
  }
  return ElfError::kOk;
}

const ElfSection* ElfImage::FindSection(std::string_view name) const {
  if (header_.shstrndx >= sections_.size()) return nullptr;
  std::optional<std::span<const uint8_t>> names =
      SectionBytes(sections_[header_.shstrndx]);
  if (!names) return nullptr;
  for (const ElfSection& s : sections_) {
    // An empty name is never found: StringAt gives it for unreadable ones.
    if (!name.empty() && StringAt(*names, s.name) == name) return &s;
  }
  return nullptr;
}

ElfError ElfImage::ReadSymbols(const ElfSection& table,
                               std::vector<ElfSymbol>* out) const {
  out->clear();
  if (table.link >= sections_.size() || table.entsize != kElf64SymbolSize) {
    return ElfError::kBadSymbolTable;
  }
  std::optional<std::span<const uint8_t>> symbols = SectionBytes(table);
  std::optional<std::span<const uint8_t>> strings =
      SectionBytes(sections_[table.link]);
  if (!symbols || !strings) return ElfError::kSymbolTableOutside;
  const uint64_t count = symbols->size() / kElf64SymbolSize;
  out->reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* p = symbols->data() + i * kElf64SymbolSize;
    ElfSymbol s;
    s.name = StringAt(*strings, U32(p + 0));
    s.info = p[4];
    s.shndx = U16(p + 6);
    s.value = U64(p + 8);
    s.size = U64(p + 16);
    out->push_back(s);
  }
  return ElfError::kOk;
}

ElfError ElfImage::ReadNotes(const ElfSection& section,
                             std::vector<ElfNote>* out) const {
  out->clear();
  std::optional<std::span<const uint8_t>> bytes = SectionBytes(section);
  if (!bytes) return ElfError::kNotesOutside;
  const uint8_t* p = bytes->data();
  uint64_t left = bytes->size();
  // Each note: namesz, descsz, type, then the name and the descriptor,
  // each padded to 4 bytes.
  while (left >= 12) {
    const uint32_t namesz = U32(p), descsz = U32(p + 4);
    const uint64_t name_pad = (uint64_t{namesz} + 3) & ~uint64_t{3};
    const uint64_t desc_pad = (uint64_t{descsz} + 3) & ~uint64_t{3};
    if (name_pad + desc_pad > left - 12) break;
    ElfNote note;
    note.type = U32(p + 8);
    note.name = std::span<const uint8_t>(p + 12, namesz);
    note.desc = std::span<const uint8_t>(p + 12 + name_pad, descsz);
    out->push_back(note);
    p += 12 + name_pad + desc_pad;
    left -= 12 + name_pad + desc_pad;
  }
  return ElfError::kOk;
}

}  // namespace hal::formats
