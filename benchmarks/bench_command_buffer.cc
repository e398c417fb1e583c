// Command-buffer recording cost per command, next to the cost of appending
// the same bytes to a std::vector (what any recorder must at least do).
//
// Each iteration creates a command buffer, records N commands and ends it,
// so per-command figures include the amortized growth of the command list,
// as the vector baseline includes its own growth. Items are commands:
// `items_per_second` inverted is the cost per command, and the `ns_per_cmd`
// counter says it directly.
#include <cstdint>
#include <cstring>
#include <vector>

#include "benchmarks/bench_common.h"
#include "hal/command_buffer.h"
#include "hal/executable.h"

namespace hal::bench {
namespace {

constexpr uint32_t kUpdateBytes = 64;

// Reports seconds-per-command as nanoseconds.
void ReportNsPerCommand(benchmark::State& state) {
  const double n = static_cast<double>(state.iterations() * state.range(0));
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["ns_per_cmd"] = benchmark::Counter(
      n / 1e9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// What a recorded command holds, packed, as the baseline appends it.
struct PackedFill {
  uint64_t buffer, offset, length;
  uint32_t pattern;
  uint8_t pattern_length, opcode, pad[2];
};
struct PackedCopy {
  uint64_t source, source_offset, target, target_offset, length;
  uint32_t opcode, pad;
};
struct PackedUpdate {
  uint64_t buffer, offset, length;
  uint32_t opcode, pad;
};
// A dispatch of a function with 1 constant and 4 bindings.
struct PackedDispatch4 {
  uint64_t executable;
  uint32_t opcode, entry_point;
  uint32_t workgroup_count[3];
  uint32_t constant;
  struct {
    uint64_t buffer, offset, length;
  } bindings[4];
};

template <typename T>
void AppendBytes(std::vector<uint8_t>& out, const T& value) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&value);
  out.insert(out.end(), p, p + sizeof(T));
}

struct Buffers {
  Ref<Buffer> a, b;
};

bool MakeBuffers(benchmark::State& state, Buffers* out) {
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  params.usage = BufferUsage::kTransfer;
  auto a = GetDevice()->allocator()->AllocateBuffer(params, 1 << 16);
  auto b = GetDevice()->allocator()->AllocateBuffer(params, 1 << 16);
  if (!a.ok() || !b.ok()) {
    SkipWithStatus(state, a.ok() ? b.status() : a.status());
    return false;
  }
  out->a = std::move(a).value();
  out->b = std::move(b).value();
  return true;
}

StatusOr<Ref<CommandBuffer>> BeginCommandBuffer() {
  HAL_ASSIGN_OR_RETURN(
      Ref<CommandBuffer> cb,
      GetDevice()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                       CommandCategory::kTransfer, 1, 0));
  HAL_RETURN_IF_ERROR(cb->Begin());
  return cb;
}

// Baselines.

void BM_Baseline_VectorAppendFill(benchmark::State& state) {
  const int64_t n = state.range(0);
  PackedFill cmd{0x1000, 0, 256, 0xABCDABCD, 4, 1, {}};
  for (auto _ : state) {
    std::vector<uint8_t> out;
    for (int64_t i = 0; i < n; ++i) {
      cmd.offset = (i & 63) * 256;
      AppendBytes(out, cmd);
    }
    benchmark::DoNotOptimize(out.data());
  }
  ReportNsPerCommand(state);
}

void BM_Baseline_VectorAppendCopy(benchmark::State& state) {
  const int64_t n = state.range(0);
  PackedCopy cmd{0x1000, 0, 0x2000, 0, 256, 2, 0};
  for (auto _ : state) {
    std::vector<uint8_t> out;
    for (int64_t i = 0; i < n; ++i) {
      cmd.source_offset = cmd.target_offset = (i & 63) * 256;
      AppendBytes(out, cmd);
    }
    benchmark::DoNotOptimize(out.data());
  }
  ReportNsPerCommand(state);
}

void BM_Baseline_VectorAppendUpdate(benchmark::State& state) {
  const int64_t n = state.range(0);
  PackedUpdate cmd{0x1000, 0, kUpdateBytes, 3, 0};
  uint8_t payload[kUpdateBytes];
  std::memset(payload, 7, sizeof(payload));
  for (auto _ : state) {
    std::vector<uint8_t> out;
    for (int64_t i = 0; i < n; ++i) {
      cmd.offset = (i & 63) * 256;
      AppendBytes(out, cmd);
      out.insert(out.end(), payload, payload + kUpdateBytes);
    }
    benchmark::DoNotOptimize(out.data());
  }
  ReportNsPerCommand(state);
}

void BM_Baseline_VectorAppendDispatch4(benchmark::State& state) {
  const int64_t n = state.range(0);
  PackedDispatch4 cmd{};
  cmd.executable = 0x4000;
  cmd.opcode = 4;
  cmd.entry_point = 14;
  cmd.workgroup_count[0] = cmd.workgroup_count[1] = cmd.workgroup_count[2] = 1;
  cmd.constant = 64;
  for (int b = 0; b < 4; ++b) {
    cmd.bindings[b] = {0x1000u + 0x1000u * b, 0, 256};
  }
  for (auto _ : state) {
    std::vector<uint8_t> out;
    for (int64_t i = 0; i < n; ++i) {
      for (auto& b : cmd.bindings) b.offset = (i & 63) * 256;
      AppendBytes(out, cmd);
    }
    benchmark::DoNotOptimize(out.data());
  }
  ReportNsPerCommand(state);
}

// HAL recording.

void BM_Record_Fill(benchmark::State& state) {
  const int64_t n = state.range(0);
  Buffers buffers;
  if (!MakeBuffers(state, &buffers)) return;
  const uint32_t pattern = 0xABCDABCD;
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, Ref<CommandBuffer> cb, BeginCommandBuffer());
    for (int64_t i = 0; i < n; ++i) {
      HAL_BENCH_CHECK(
          state, cb->FillBuffer(
                     BufferRef::Direct(buffers.a.get(), (i & 63) * 256, 256),
                     &pattern, 4));
    }
    HAL_BENCH_CHECK(state, cb->End());
  }
  ReportNsPerCommand(state);
}

void BM_Record_Copy(benchmark::State& state) {
  const int64_t n = state.range(0);
  Buffers buffers;
  if (!MakeBuffers(state, &buffers)) return;
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, Ref<CommandBuffer> cb, BeginCommandBuffer());
    for (int64_t i = 0; i < n; ++i) {
      const DeviceSize offset = (i & 63) * 256;
      HAL_BENCH_CHECK(
          state,
          cb->CopyBuffer(BufferRef::Direct(buffers.a.get(), offset, 256),
                         BufferRef::Direct(buffers.b.get(), offset, 256), 256));
    }
    HAL_BENCH_CHECK(state, cb->End());
  }
  ReportNsPerCommand(state);
}

void BM_Record_Update(benchmark::State& state) {
  const int64_t n = state.range(0);
  Buffers buffers;
  if (!MakeBuffers(state, &buffers)) return;
  uint8_t payload[kUpdateBytes];
  std::memset(payload, 7, sizeof(payload));
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, Ref<CommandBuffer> cb, BeginCommandBuffer());
    for (int64_t i = 0; i < n; ++i) {
      HAL_BENCH_CHECK(
          state, cb->UpdateBuffer(
                     payload, BufferRef::Direct(buffers.a.get(), (i & 63) * 256,
                                                kUpdateBytes)));
    }
    HAL_BENCH_CHECK(state, cb->End());
  }
  ReportNsPerCommand(state);
}

// Fills that go to 64 buffers in turn: more distinct buffers than the
// command buffer's retain cache holds, so every command takes the resource
// set's miss path (an AddRef and an entry per command): its worst case.
void BM_Record_FillManyBuffers(benchmark::State& state) {
  const int64_t n = state.range(0);
  constexpr int kBuffers = 64;
  std::vector<Ref<Buffer>> buffers;
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  params.usage = BufferUsage::kTransfer;
  for (int i = 0; i < kBuffers; ++i) {
    HAL_BENCH_ASSIGN(state, Ref<Buffer> b,
                     GetDevice()->allocator()->AllocateBuffer(params, 1 << 12));
    buffers.push_back(std::move(b));
  }
  const uint32_t pattern = 0xABCDABCD;
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(state, Ref<CommandBuffer> cb, BeginCommandBuffer());
    for (int64_t i = 0; i < n; ++i) {
      HAL_BENCH_CHECK(
          state,
          cb->FillBuffer(BufferRef::Direct(buffers[i % kBuffers].get(), 0, 256),
                         &pattern, 4));
    }
    HAL_BENCH_CHECK(state, cb->End());
  }
  ReportNsPerCommand(state);
}

// Binding-table slots skip the buffer checks at record time (they happen at
// submission), so this is the floor of the recorder itself.
void BM_Record_FillSlot(benchmark::State& state) {
  const int64_t n = state.range(0);
  const uint32_t pattern = 0xABCDABCD;
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(
        state, Ref<CommandBuffer> cb,
        GetDevice()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                         CommandCategory::kTransfer, 1, 1));
    HAL_BENCH_CHECK(state, cb->Begin());
    for (int64_t i = 0; i < n; ++i) {
      HAL_BENCH_CHECK(
          state,
          cb->FillBuffer(BufferRef::Slot(0, (i & 63) * 256, 256), &pattern, 4));
    }
    HAL_BENCH_CHECK(state, cb->End());
  }
  ReportNsPerCommand(state);
}

// A dispatch of the test kernel `sum3` (1 constant, 4 bindings: 3 read-only,
// 1 written) over 4 direct buffer ranges, as the copy and fill above.
void BM_Record_Dispatch4(benchmark::State& state) {
  const int64_t n = state.range(0);
  HAL_BENCH_ASSIGN(state, Ref<Executable> exe, TestKernels());
  HAL_BENCH_ASSIGN(state, uint32_t entry, exe->LookupFunction("sum3"));
  Ref<Buffer> buffers[4];
  BufferParams params;
  params.type = MemoryType::kDeviceLocal;
  params.usage = BufferUsage::kDispatchStorage;
  for (auto& b : buffers) {
    HAL_BENCH_ASSIGN(state, b,
                     GetDevice()->allocator()->AllocateBuffer(params, 1 << 16));
  }
  const uint32_t constants[1] = {64};
  BufferRef bindings[4];
  DispatchParams dispatch;
  dispatch.executable = exe.get();
  dispatch.entry_point = entry;
  dispatch.constants = constants;
  dispatch.bindings = bindings;
  for (auto _ : state) {
    HAL_BENCH_ASSIGN(
        state, Ref<CommandBuffer> cb,
        GetDevice()->CreateCommandBuffer(CommandBufferMode::kOneShot,
                                         CommandCategory::kDispatch, 1, 0));
    HAL_BENCH_CHECK(state, cb->Begin());
    for (int64_t i = 0; i < n; ++i) {
      const DeviceSize offset = (i & 63) * 256;
      for (int b = 0; b < 4; ++b) {
        bindings[b] = BufferRef::Direct(buffers[b].get(), offset, 256);
      }
      HAL_BENCH_CHECK(state, cb->Dispatch(dispatch));
    }
    HAL_BENCH_CHECK(state, cb->End());
  }
  ReportNsPerCommand(state);
}

#define HAL_RECORD_SIZES ->Arg(10)->Arg(1000)->Arg(100000)
BENCHMARK(BM_Baseline_VectorAppendFill) HAL_RECORD_SIZES;
BENCHMARK(BM_Record_Fill) HAL_RECORD_SIZES;
BENCHMARK(BM_Record_FillSlot) HAL_RECORD_SIZES;
BENCHMARK(BM_Record_FillManyBuffers) HAL_RECORD_SIZES;
BENCHMARK(BM_Baseline_VectorAppendCopy) HAL_RECORD_SIZES;
BENCHMARK(BM_Record_Copy) HAL_RECORD_SIZES;
BENCHMARK(BM_Baseline_VectorAppendUpdate) HAL_RECORD_SIZES;
BENCHMARK(BM_Record_Update) HAL_RECORD_SIZES;
BENCHMARK(BM_Baseline_VectorAppendDispatch4) HAL_RECORD_SIZES;
BENCHMARK(BM_Record_Dispatch4) HAL_RECORD_SIZES;
#undef HAL_RECORD_SIZES

}  // namespace
}  // namespace hal::bench

HAL_BENCH_MAIN()
