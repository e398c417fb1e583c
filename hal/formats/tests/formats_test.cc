// The shared format readers on small hand-made inputs: what they read, and
// that malformed input is an error (never a read outside the input; the
// asan preset checks the reads).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "hal/formats/elf_reader.h"
#include "hal/formats/ptx_reader.h"
#include "hal/formats/spirv_reader.h"

namespace hal::formats {
namespace {

void Put16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  std::memcpy(b.data() + at, &v, 2);  // little-endian hosts only
}
void Put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  std::memcpy(b.data() + at, &v, 4);
}
void Put64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  std::memcpy(b.data() + at, &v, 8);
}

// An ELF64 image: header, .shstrtab/.strtab (one string table), a note
// section with one note, a symbol table with the null symbol and "k.kd",
// then the section headers (null, .strtab, .note, .symtab).
std::vector<uint8_t> MakeElf() {
  const char strings[] = "\0.strtab\0.note\0.symtab\0k.kd\0";  // 28 bytes
  std::vector<uint8_t> b(64);
  const uint8_t ident[] = {0x7f, 'E', 'L', 'F', 2, 1};  // ELFCLASS64, LSB
  std::memcpy(b.data(), ident, sizeof(ident));
  Put16(b, 18, kElfMachineAmdgpu);
  Put32(b, 48, 0x3f);
  const size_t strtab = b.size();
  b.resize(strtab + sizeof(strings) - 1);
  std::memcpy(b.data() + strtab, strings, sizeof(strings) - 1);
  const size_t note = b.size();
  b.resize(note + 12 + 8 + 4);
  Put32(b, note, 7);      // "AMDGPU\0", padded to 8
  Put32(b, note + 4, 3);  // 3 bytes, padded to 4
  Put32(b, note + 8, 32);
  std::memcpy(b.data() + note + 12, "AMDGPU", 7);
  std::memcpy(b.data() + note + 20, "abc", 3);
  const size_t symtab = b.size();
  b.resize(symtab + 2 * kElf64SymbolSize);
  Put32(b, symtab + 24, 23);  // "k.kd"
  b[symtab + 24 + 4] = kElfSymbolObject;
  Put16(b, symtab + 24 + 6, 2);
  Put64(b, symtab + 24 + 16, 64);
  const size_t shoff = b.size();
  b.resize(shoff + 4 * kElf64SectionHeaderSize);
  auto section = [&](int i, uint32_t name, uint32_t type, size_t offset,
                     size_t size, uint32_t link, uint64_t entsize) {
    const size_t at = shoff + i * kElf64SectionHeaderSize;
    Put32(b, at, name);
    Put32(b, at + 4, type);
    Put64(b, at + 24, offset);
    Put64(b, at + 32, size);
    Put32(b, at + 40, link);
    Put64(b, at + 56, entsize);
  };
  section(1, 1, 3, strtab, sizeof(strings) - 1, 0, 0);
  section(2, 9, kElfSectionNote, note, 24, 0, 0);
  section(3, 15, kElfSectionSymtab, symtab, 2 * kElf64SymbolSize, 1,
          kElf64SymbolSize);
  Put64(b, 40, shoff);
  Put16(b, 58, kElf64SectionHeaderSize);
  Put16(b, 60, 4);
  Put16(b, 62, 1);
  return b;
}

TEST(ElfReader, ReadsHeaderSectionsSymbolsAndNotes) {
  const std::vector<uint8_t> elf = MakeElf();
  ElfImage image;
  ASSERT_EQ(ElfImage::Open(elf, &image), ElfError::kOk);
  EXPECT_EQ(image.header().machine, kElfMachineAmdgpu);
  EXPECT_EQ(image.header().flags, 0x3fu);
  ASSERT_EQ(image.sections().size(), 4u);
  const ElfSection* symtab = image.FindSection(".symtab");
  ASSERT_NE(symtab, nullptr);
  EXPECT_EQ(symtab, &image.sections()[3]);
  EXPECT_EQ(image.FindSection(".text"), nullptr);
  std::vector<ElfSymbol> symbols;
  ASSERT_EQ(image.ReadSymbols(*symtab, &symbols), ElfError::kOk);
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[1].name, "k.kd");
  EXPECT_EQ(symbols[1].type(), kElfSymbolObject);
  EXPECT_EQ(symbols[1].shndx, 2);
  EXPECT_EQ(symbols[1].size, 64u);
  std::vector<ElfNote> notes;
  ASSERT_EQ(image.ReadNotes(*image.FindSection(".note"), &notes),
            ElfError::kOk);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].type, 32u);
  ASSERT_EQ(notes[0].name.size(), 7u);
  EXPECT_EQ(std::memcmp(notes[0].name.data(), "AMDGPU", 7), 0);
  ASSERT_EQ(notes[0].desc.size(), 3u);
  EXPECT_EQ(std::memcmp(notes[0].desc.data(), "abc", 3), 0);
}

TEST(ElfReader, MalformedImagesAreErrors) {
  const std::vector<uint8_t> elf = MakeElf();
  ElfImage image;
  ElfHeader h;
  EXPECT_EQ(ReadElfHeader(std::span(elf.data(), 63), &h), ElfError::kTooShort);
  std::vector<uint8_t> bad = elf;
  bad[1] = 'e';
  EXPECT_EQ(ElfImage::Open(bad, &image), ElfError::kNotElf);
  bad = elf;
  bad[5] = 2;  // big-endian
  EXPECT_EQ(ElfImage::Open(bad, &image), ElfError::kNotElf64Lsb);
  bad = elf;
  Put16(bad, 58, 40);
  EXPECT_EQ(ElfImage::Open(bad, &image), ElfError::kBadSectionTable);
  EXPECT_EQ(ElfImage::Open(std::span(elf.data(), elf.size() - 1), &image),
            ElfError::kSectionTableOutside);
  bad = elf;
  Put64(bad, 40, ~uint64_t{0} - 8);  // e_shoff near 2^64: no overflow
  EXPECT_EQ(ElfImage::Open(bad, &image), ElfError::kSectionTableOutside);

  ASSERT_EQ(ElfImage::Open(elf, &image), ElfError::kOk);
  std::vector<ElfSymbol> symbols;
  ElfSection symtab = image.sections()[3];
  symtab.link = 4;
  EXPECT_EQ(image.ReadSymbols(symtab, &symbols), ElfError::kBadSymbolTable);
  symtab = image.sections()[3];
  symtab.size = elf.size();
  EXPECT_EQ(image.ReadSymbols(symtab, &symbols), ElfError::kSymbolTableOutside);
  std::vector<ElfNote> notes;
  ElfSection note = image.sections()[2];
  note.offset = ~uint64_t{0};
  EXPECT_EQ(image.ReadNotes(note, &notes), ElfError::kNotesOutside);
  note = image.sections()[2];
  note.size = 23;  // the descriptor's padding cut: the note is left out
  ASSERT_EQ(image.ReadNotes(note, &notes), ElfError::kOk);
  EXPECT_TRUE(notes.empty());

  // A name outside its string table, or unterminated, reads as empty.
  bad = elf;
  Put32(bad, elf.size() - 4 * 64 - 24, 1000);
  ASSERT_EQ(ElfImage::Open(bad, &image), ElfError::kOk);
  ASSERT_EQ(image.ReadSymbols(image.sections()[3], &symbols), ElfError::kOk);
  EXPECT_EQ(symbols[1].name, "");

  // Every truncation opens or fails cleanly.
  for (size_t n = 0; n <= elf.size(); ++n) {
    if (ElfImage::Open(std::span(elf.data(), n), &image) != ElfError::kOk) {
      continue;
    }
    for (const ElfSection& s : image.sections()) {
      image.ReadSymbols(s, &symbols);
      image.ReadNotes(s, &notes);
    }
  }
}

TEST(PtxReader, ReadsEntriesAndParameterTypes) {
  const std::string ptx =
      ".version 7.0\n.target sm_70\n"
      ".visible .entry fill(\n  .param .u64 p0,\n  .param .u32 p1\n)\n{}\n"
      ".entry\tnoargs\n{}\n"
      ".entry $x_1 ( .param .f32 f ) {}\n";
  std::vector<PtxEntry> entries;
  std::string error;
  ASSERT_TRUE(ReadPtxEntries(ptx, &entries, &error)) << error;
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "fill");
  EXPECT_EQ(entries[0].param_types, (std::vector<std::string>{".u64", ".u32"}));
  EXPECT_EQ(entries[1].name, "noargs");
  EXPECT_TRUE(entries[1].param_types.empty());
  EXPECT_EQ(entries[2].name, "$x_1");
  EXPECT_EQ(entries[2].param_types, std::vector<std::string>{".f32"});
}

TEST(PtxReader, MalformedEntriesAreErrors) {
  std::vector<PtxEntry> entries;
  std::string error;
  EXPECT_FALSE(ReadPtxEntries(".entry a() .entry (", &entries, &error));
  EXPECT_EQ(entries.size(), 1u);  // the entries before the malformed one
  EXPECT_NE(error.find("without a name"), std::string::npos) << error;
  EXPECT_FALSE(ReadPtxEntries(".entry", &entries, &error));
  EXPECT_FALSE(ReadPtxEntries(".entry a(.param .u32 p", &entries, &error));
  EXPECT_NE(error.find("no ')'"), std::string::npos) << error;
  EXPECT_FALSE(ReadPtxEntries(".entry a(.param )", &entries, &error));
  EXPECT_NE(error.find("no type"), std::string::npos) << error;
  EXPECT_FALSE(
      ReadPtxEntries(".entry a(.param , .param .u32 x)", &entries, &error));
  EXPECT_FALSE(ReadPtxEntries(".entry ( .entry a()", &entries, &error));
  EXPECT_TRUE(entries.empty());
}

std::vector<uint8_t> Words(const std::vector<uint32_t>& w) {
  std::vector<uint8_t> b(w.size() * 4);
  std::memcpy(b.data(), w.data(), b.size());
  return b;
}

TEST(SpirvReader, ReadsKernelsAndParameterSizes) {
  // OpEntryPoint Kernel %3 "k"; %1 = OpTypeInt 32; %2 = OpTypePointer;
  // %3 = OpFunction with an int and a pointer parameter.
  const std::vector<uint8_t> spirv = Words({
      kSpirvMagic,     0x10000, 0,  10,  0,  //
      (4u << 16) | 15, 6,       3,  'k',     //
      (4u << 16) | 21, 1,       32, 0,       //
      (4u << 16) | 32, 2,       5,  1,       //
      (5u << 16) | 54, 1,       3,  0,   1,  //
      (3u << 16) | 55, 1,       4,           //
      (3u << 16) | 55, 2,       5,           //
      (1u << 16) | 56,
  });
  std::vector<SpirvKernel> kernels;
  std::string error;
  ASSERT_TRUE(ParseSpirvKernels(spirv, &kernels, &error)) << error;
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, "k");
  EXPECT_EQ(kernels[0].param_bytes, (std::vector<int>{4, 8}));
  for (size_t n = 0; n < spirv.size(); ++n) {
    ParseSpirvKernels(std::span(spirv.data(), n), &kernels, &error);
  }
  std::vector<uint8_t> bad = spirv;
  bad[0] ^= 1;
  EXPECT_FALSE(ParseSpirvKernels(bad, &kernels, &error));
  EXPECT_NE(error.find("bad magic"), std::string::npos) << error;
}

}  // namespace
}  // namespace hal::formats
