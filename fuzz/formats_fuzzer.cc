// The kernel-format readers (hal/formats/): any bytes, read as an ELF64
// image (header, sections by name, every symbol table and note section), as
// SPIR-V and as PTX, give a result or an error, never a read outside the
// input; what they return lies inside the input and is what they promise.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "hal/formats/elf_reader.h"
#include "hal/formats/ptx_reader.h"
#include "hal/formats/spirv_reader.h"

namespace {

bool Inside(std::span<const uint8_t> input, const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  return n == 0 || (b >= input.data() && n <= input.size() &&
                    b - input.data() <= std::ptrdiff_t(input.size() - n));
}

void ReadElf(std::span<const uint8_t> input) {
  using namespace hal::formats;
  ElfImage elf;
  if (ElfImage::Open(input, &elf) != ElfError::kOk) return;
  HAL_FUZZ_CHECK(elf.sections().size() == elf.header().shnum,
                 "%zu sections for e_shnum %u", elf.sections().size(),
                 elf.header().shnum);
  for (const char* name : {".symtab", ".note", ".strtab", ""}) {
    const ElfSection* s = elf.FindSection(name);
    HAL_FUZZ_CHECK(!s || (s >= elf.sections().data() &&
                          s < elf.sections().data() + elf.sections().size()),
                   "FindSection(%s) outside the section list", name);
  }
  std::vector<ElfSymbol> symbols;
  std::vector<ElfNote> notes;
  for (const ElfSection& s : elf.sections()) {
    if (elf.ReadSymbols(s, &symbols) == ElfError::kOk) {
      HAL_FUZZ_CHECK(symbols.size() == s.size / kElf64SymbolSize,
                     "%zu symbols in %llu bytes", symbols.size(),
                     static_cast<unsigned long long>(s.size));
      for (const ElfSymbol& sym : symbols) {
        HAL_FUZZ_CHECK(Inside(input, sym.name.data(), sym.name.size() + 1) ||
                           sym.name.empty(),
                       "a symbol name outside the image");
      }
    }
    if (elf.ReadNotes(s, &notes) == ElfError::kOk) {
      for (const ElfNote& note : notes) {
        HAL_FUZZ_CHECK(Inside(input, note.name.data(), note.name.size()) &&
                           Inside(input, note.desc.data(), note.desc.size()),
                       "a note outside the image");
      }
    }
  }
}

void ReadSpirv(std::span<const uint8_t> input) {
  std::vector<hal::formats::SpirvKernel> kernels;
  std::string error;
  if (hal::formats::ParseSpirvKernels(input, &kernels, &error)) {
    HAL_FUZZ_CHECK(!kernels.empty(), "SPIR-V read without kernels");
  } else {
    HAL_FUZZ_CHECK(!error.empty(), "SPIR-V refused without a reason");
  }
}

void ReadPtx(std::span<const uint8_t> input) {
  std::string_view ptx(reinterpret_cast<const char*>(input.data()),
                       input.size());
  std::vector<hal::formats::PtxEntry> entries;
  std::string error;
  const bool ok = hal::formats::ReadPtxEntries(ptx, &entries, &error);
  HAL_FUZZ_CHECK(ok || !error.empty(), "PTX refused without a reason");
  for (const hal::formats::PtxEntry& e : entries) {
    HAL_FUZZ_CHECK(!e.name.empty() && ptx.find(e.name) != ptx.npos,
                   "entry name '%s' not in the text", e.name.c_str());
    for (const std::string& t : e.param_types) {
      HAL_FUZZ_CHECK(!t.empty(), "an empty parameter type");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> input(data, size);
  ReadElf(input);
  ReadSpirv(input);
  ReadPtx(input);
  return 0;
}
