// Buffer mapping ranges: Map / MapRead / MapWrite / MapFill / Subspan /
// Flush / Invalidate with fuzzed offsets, lengths, modes and access bits on
// buffers of fuzzed types. Errors are validation codes; a successful mapping
// is exactly the requested range and every byte of it may be touched
// (AddressSanitizer checks that).
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "hal/allocator.h"
#include "hal/buffer.h"
#include "hal/driver.h"

namespace {
using namespace hal;

bool IsValidationError(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument ||
         s.code() == StatusCode::kOutOfRange ||
         s.code() == StatusCode::kFailedPrecondition;
}

void Check(const Status& s, const char* what) {
  hal::fuzz::CheckStatus(s, what);
  HAL_FUZZ_CHECK(s.ok() || IsValidationError(s), "%s: %s", what,
                 s.ToString().c_str());
}

// Whether [offset, offset+length) fits in `size` (length may be whole).
bool Fits(DeviceSize size, DeviceSize offset, DeviceSize length) {
  DeviceSize r;
  return ResolveRange(size, offset, length, &r);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hal::fuzz::FuzzInput in(data, size);
  static Ref<Device> device =
      DefaultDriverRegistry().CreateDevice("sim://?seed=1").value();
  static const MemoryType kTypes[] = {
      MemoryType::kDeviceLocal,
      MemoryType::kHostLocal | MemoryType::kHostCoherent,
      MemoryType::kHostLocal,
      MemoryType::kDeviceLocal | MemoryType::kHostVisible,
      MemoryType::kOptimal,
  };
  BufferParams params;
  params.type = kTypes[in.Below(5)];
  params.usage = static_cast<BufferUsage>(
      in.U32() &
      static_cast<uint32_t>(BufferUsage::kDefault | BufferUsage::kMapping));
  params.access = static_cast<MemoryAccess>(in.U8() & 7);
  params.min_alignment = in.Bool() ? 0 : DeviceSize{1} << in.Below(20);
  DeviceSize length = in.U32() % 4097;
  StatusOr<Ref<Buffer>> allocated =
      device->allocator()->AllocateBuffer(params, length);
  if (!allocated.ok()) {
    Check(allocated.status(), "AllocateBuffer");
    return 0;
  }
  Ref<Buffer> buffer = allocated.value();
  std::vector<BufferMapping> mappings;
  std::vector<uint8_t> scratch(8192);
  while (!in.empty()) {
    switch (in.Below(8)) {
      case 0: {  // Subspan: later calls use it
        DeviceSize off = in.Size(buffer->byte_length());
        DeviceSize len = in.Size(buffer->byte_length());
        StatusOr<Ref<Buffer>> sub = buffer->Subspan(off, len);
        HAL_FUZZ_CHECK(sub.ok() == Fits(buffer->byte_length(), off, len),
                       "Subspan(%llu, %llu) of %llu", (unsigned long long)off,
                       (unsigned long long)len,
                       (unsigned long long)buffer->byte_length());
        if (sub.ok()) buffer = sub.value();
        break;
      }
      case 1: {  // Map
        MappingMode mode =
            in.Bool() ? MappingMode::kScoped : MappingMode::kPersistent;
        auto access = static_cast<MemoryAccess>(in.U8() & 7);
        DeviceSize off = in.Size(buffer->byte_length());
        DeviceSize len = in.Size(buffer->byte_length());
        StatusOr<BufferMapping> m = buffer->Map(mode, access, off, len);
        if (!m.ok()) {
          Check(m.status(), "Map");
          if (m.status().code() == StatusCode::kOutOfRange) {
            HAL_FUZZ_CHECK(!Fits(buffer->byte_length(), off, len), "Map range");
          }
          break;
        }
        HAL_FUZZ_CHECK(Fits(buffer->byte_length(), off, len),
                       "Map accepted a bad range");
        DeviceSize expect =
            len == kWholeBuffer ? buffer->byte_length() - off : len;
        HAL_FUZZ_CHECK(m->size() == expect, "mapping has %zu bytes, not %llu",
                       m->size(), (unsigned long long)expect);
        if (m->size() && Any(access & MemoryAccess::kWrite)) {
          std::memset(m->data(), in.U8(), m->size());
        } else if (m->size()) {
          // Reads every byte (ASan checks each); the sum is kept live so
          // the loop is not dropped (compound assignment to a volatile is
          // deprecated in C++20).
          uint8_t sum = 0;
          for (size_t i = 0; i < m->size(); ++i) sum ^= m->data()[i];
          volatile uint8_t sink = sum;
          (void)sink;
        }
        mappings.push_back(std::move(m).value());
        break;
      }
      case 2:
      case 3: {  // Flush / Invalidate on a mapping
        if (mappings.empty()) break;
        BufferMapping& m = mappings[in.Below(mappings.size())];
        DeviceSize off = in.Size(m.size());
        DeviceSize len = in.Size(m.size());
        Status s = in.Bool() ? m.Flush(off, len) : m.Invalidate(off, len);
        Check(s, "Flush/Invalidate");
        if (m.data() || m.size()) {
          HAL_FUZZ_CHECK(
              s.ok() == Fits(m.size(), off, len),
              "Flush/Invalidate(%llu, %llu) of a %zu-byte mapping: %s",
              (unsigned long long)off, (unsigned long long)len, m.size(),
              s.ToString().c_str());
        }
        break;
      }
      case 4: {  // Unmap
        if (mappings.empty()) break;
        size_t i = in.Below(mappings.size());
        Check(mappings[i].Unmap(), "Unmap");
        mappings.erase(mappings.begin() + i);
        break;
      }
      case 5: {  // MapWrite / MapRead
        DeviceSize off = in.Size(buffer->byte_length());
        DeviceSize len = in.Size(buffer->byte_length());
        if (len != kWholeBuffer && len > scratch.size()) len %= scratch.size();
        Status s = in.Bool() ? buffer->MapWrite(off, scratch.data(), len)
                             : buffer->MapRead(off, scratch.data(), len);
        Check(s, "MapWrite/MapRead");
        break;
      }
      case 6: {  // MapFill
        uint32_t pattern = in.U32();
        size_t plen = in.Below(5);
        DeviceSize off = in.Size(buffer->byte_length());
        DeviceSize len = in.Size(buffer->byte_length());
        Check(buffer->MapFill(off, len, &pattern, plen), "MapFill");
        break;
      }
      case 7: {  // back to the whole allocation
        buffer = Ref<Buffer>(buffer->allocated_buffer());
        break;
      }
    }
  }
  return 0;
}
