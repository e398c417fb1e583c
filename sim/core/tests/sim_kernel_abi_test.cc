// The simulator kernel ABI v2 (sim/core/sim_kernel_abi.h) and its native macro
// layer (hal/cts/kernels/hal_kernel.h): a call runs a range of workgroups in
// linear order with the right ids; every access is checked against per-call
// locals, and whatever the fast check refuses goes to the exact checks, so
// accesses and faults are those of the per-access checks of ABI v1 (the
// first fault of a call wins, execution goes on after it). Then the same
// through the HAL: ExecuteSimDispatch splits a dispatch into ranges over its
// workers and reports the fault of the lowest workgroup whatever the worker
// count.
#include "sim/core/sim_kernel_abi.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hal/cts/test_kernels.h"
#include "hal/driver.h"
#include "hal/executable.h"

extern "C" {
void abi_ids_3d(hal_sim_dispatch_state* s);
void abi_ids_flat(hal_sim_dispatch_state* s);
void abi_copy_plus(hal_sim_dispatch_state* s);
void abi_gaps(hal_sim_dispatch_state* s);
void abi_atomic(hal_sim_dispatch_state* s);
void abi_store_b1(hal_sim_dispatch_state* s);
void abi_windows(hal_sim_dispatch_state* s);
}

namespace hal::sim {
namespace {

using U32s = std::vector<uint32_t>;
constexpr uint32_t kUnset = 0xFFFFFFFFu;

// One call's inputs: bindings (host vectors), constants, grid, range.
struct Call {
  std::vector<U32s*> buffers;
  std::vector<uint32_t> flags;
  std::vector<uint8_t*> data;
  std::vector<uint64_t> lengths;
  U32s constants;
  hal_sim_dispatch_state state{};

  Call(std::vector<U32s*> b, std::vector<uint32_t> f, U32s c,
       const uint32_t count[3], const uint32_t size[3], uint64_t begin,
       uint64_t end)
      : buffers(std::move(b)), flags(std::move(f)), constants(std::move(c)) {
    for (U32s* v : buffers) {
      data.push_back(reinterpret_cast<uint8_t*>(v->data()));
      lengths.push_back(v->size() * 4);
    }
    for (int i = 0; i < 3; ++i) {
      state.workgroup_count[i] = count[i];
      state.workgroup_size[i] = size[i];
    }
    state.workgroup_begin = begin;
    state.workgroup_end = end;
    state.constant_count = static_cast<uint32_t>(constants.size());
    state.constants = constants.data();
    state.binding_count = static_cast<uint32_t>(buffers.size());
    state.binding_data = data.data();
    state.binding_lengths = lengths.data();
    state.binding_flags = flags.data();
  }
  void Run(hal_sim_kernel_fn kernel) { kernel(&state); }
};

constexpr uint32_t kFlat[3] = {64, 1, 1};

TEST(SimKernelAbi, RangeOfWorkgroups3dRunsExactlyThoseWithTheirIds) {
  const uint32_t count[3] = {3, 2, 2}, size[3] = {2, 3, 2};
  const uint64_t total = 12;
  // Every range, including ones that start and end inside a grid row.
  for (uint64_t begin = 0; begin < total; ++begin) {
    for (uint64_t end = begin + 1; end <= total; ++end) {
      U32s out(total * 12 * 2, kUnset);
      Call c({&out}, {0}, {count[0], count[1]}, count, size, begin, end);
      c.Run(abi_ids_3d);
      ASSERT_EQ(c.state.fault, HAL_SIM_FAULT_NONE);
      for (uint64_t wg = 0; wg < total; ++wg) {
        uint32_t x = wg % 3, y = (wg / 3) % 2, z = wg / 6;
        for (uint32_t l = 0; l < 12; ++l) {
          uint32_t lx = l % 2, ly = (l / 2) % 3, lz = l / 6;
          uint64_t n = wg * 12 + l;
          bool ran = wg >= begin && wg < end;
          ASSERT_EQ(out[2 * n], ran ? x + 100 * y + 10000 * z + 1 : kUnset)
              << "range [" << begin << ", " << end << ") workgroup " << wg;
          ASSERT_EQ(out[2 * n + 1], ran ? lx + 10 * ly + 100 * lz : kUnset)
              << "range [" << begin << ", " << end << ") workgroup " << wg;
        }
      }
    }
  }
}

TEST(SimKernelAbi, RangeOfWorkgroupsFlatRunsExactlyThoseWithTheirIds) {
  const uint32_t count[3] = {3, 2, 2};
  const uint64_t total = 12;
  for (uint64_t begin = 0; begin < total; ++begin) {
    for (uint64_t end = begin + 1; end <= total; ++end) {
      U32s out(total * 64, kUnset);
      Call c({&out}, {0}, {count[0], count[1]}, count, kFlat, begin, end);
      c.Run(abi_ids_flat);
      ASSERT_EQ(c.state.fault, HAL_SIM_FAULT_NONE);
      for (uint64_t wg = 0; wg < total; ++wg) {
        uint32_t x = wg % 3, y = (wg / 3) % 2, z = wg / 6;
        for (uint32_t l = 0; l < 64; ++l) {
          bool ran = wg >= begin && wg < end;
          ASSERT_EQ(out[wg * 64 + l],
                    ran ? x * 1000 + l + 1 + 1000000 * (y + 10 * z) : kUnset)
              << "range [" << begin << ", " << end << ") workgroup " << wg
              << " invocation " << l;
        }
      }
    }
  }
}

// Kernel guards against constants (`if (i < HAL_CONSTANT(c))`) fold in the
// flat loop, which runs its check-free part in rounds split where the global
// id reaches a constant: every range of workgroups, with constants before,
// at, inside and after it (and at workgroup edges), a read-only or writable
// input, and an input shorter than the grid (its reads past the end fault
// and read 0), gives exactly the invocations' results and the first fault.
TEST(SimKernelAbi, GuardsAgainstConstantsGiveEveryInvocationsResult) {
  const uint32_t count[3] = {5, 1, 1};
  const uint32_t kIds = 5 * 64;
  const uint32_t values[] = {0,   1,   63,  64,  65,         100,
                             191, 250, 320, 400, 0xFFFFFFFFu};
  for (uint32_t in_len : {kIds, 250u}) {
    for (uint32_t in_flags : {HAL_SIM_BINDING_READ_ONLY, 0u}) {
      for (uint32_t c0 : values) {
        for (uint32_t c1 : values) {
          for (uint32_t c2 : values) {
            for (uint64_t begin = 0; begin < 5; ++begin) {
              for (uint64_t end = begin + 1; end <= 5; ++end) {
                U32s in(in_len), out(kIds, kUnset);
                for (uint32_t i = 0; i < in_len; ++i) in[i] = 1000 + 3 * i;
                Call c({&in, &out}, {in_flags, 0}, {c0, c1, c2}, count, kFlat,
                       begin, end);
                c.Run(abi_windows);
                uint64_t first_bad_read = ~uint64_t{0};
                for (uint32_t i = 0; i < kIds; ++i) {
                  uint32_t want = kUnset;
                  const bool ran = i >= begin * 64 && i < end * 64;
                  if (ran && i >= c0) {
                    if (i < c1) {
                      const bool in_bounds = i < in_len;
                      if (!in_bounds && first_bad_read == ~uint64_t{0}) {
                        first_bad_read = i;
                      }
                      want = (in_bounds ? in[i] : 0u) + 1u;
                    } else {
                      want = i < c2 ? 2 * i : c2 + 5u;
                    }
                  }
                  ASSERT_EQ(out[i], want)
                      << "id " << i << " constants " << c0 << ", " << c1 << ", "
                      << c2 << " range [" << begin << ", " << end
                      << ") input length " << in_len << " flags " << in_flags;
                }
                if (first_bad_read == ~uint64_t{0}) {
                  ASSERT_EQ(c.state.fault, HAL_SIM_FAULT_NONE);
                } else {
                  ASSERT_EQ(c.state.fault, HAL_SIM_FAULT_READ_OUT_OF_BOUNDS);
                  ASSERT_EQ(c.state.fault_binding, 0u);
                  ASSERT_EQ(c.state.fault_offset, first_bad_read * 4);
                  ASSERT_EQ(c.state.fault_workgroup_id[0], first_bad_read / 64);
                  ASSERT_EQ(c.state.fault_local_id[0], first_bad_read % 64);
                }
              }
            }
          }
        }
      }
    }
  }
}

// The fast check is one limit for all bindings (the shortest); accesses past
// it that are inside a longer binding go through the slow path and happen.
TEST(SimKernelAbi, AccessPastTheShortestBindingButInBoundsIsMade) {
  const uint32_t count[3] = {4, 1, 1};
  U32s in(10), out(256, 0);
  for (uint32_t i = 0; i < 10; ++i) in[i] = 100 + i;
  Call c({&in, &out}, {HAL_SIM_BINDING_READ_ONLY, 0}, {10}, count, kFlat, 0, 4);
  c.Run(abi_copy_plus);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_NONE);
  for (uint32_t i = 0; i < 256; ++i) {
    ASSERT_EQ(out[i], i < 10 ? 101 + i : 8u) << i;
  }
}

TEST(SimKernelAbi, FirstOutOfBoundsStoreIsReportedWithWorkgroupAndInvocation) {
  const uint32_t count[3] = {4, 1, 1};
  U32s in(256, 3), out(100, 0);
  Call c({&in, &out}, {HAL_SIM_BINDING_READ_ONLY, 0}, {256}, count, kFlat, 0,
         4);
  c.Run(abi_copy_plus);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS);
  EXPECT_EQ(c.state.fault_binding, 1u);
  EXPECT_EQ(c.state.fault_offset, 400u);
  EXPECT_EQ(c.state.fault_length, 4u);
  EXPECT_EQ(c.state.fault_workgroup_id[0], 1u);  // element 100 = 64 + 36
  EXPECT_EQ(c.state.fault_local_id[0], 36u);
  EXPECT_EQ(out, U32s(100, 4));

  // A range that starts after the first fault reports its own first fault.
  U32s out2(100, 0);
  Call c2({&in, &out2}, {HAL_SIM_BINDING_READ_ONLY, 0}, {256}, count, kFlat, 2,
          4);
  c2.Run(abi_copy_plus);
  EXPECT_EQ(c2.state.fault, HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS);
  EXPECT_EQ(c2.state.fault_offset, 128u * 4);
  EXPECT_EQ(c2.state.fault_workgroup_id[0], 2u);
  EXPECT_EQ(c2.state.fault_local_id[0], 0u);
}

// Global x ids past 2^32 (a grid only the CUDA simulator can launch): the
// flat loop's 64-bit path; HAL_GLOBAL_ID_X wraps as uint arithmetic does.
TEST(SimKernelAbi, GlobalIdsPast32BitsWrapAsBefore) {
  const uint32_t count[3] = {67108865, 1, 1};  // 64 * count > 2^32
  U32s in(64), out(64, 0);
  for (uint32_t i = 0; i < 64; ++i) in[i] = 10 * i;
  Call c({&in, &out}, {HAL_SIM_BINDING_READ_ONLY, 0}, {64}, count, kFlat,
         67108863, 67108865);
  c.Run(abi_copy_plus);
  // Workgroup 67108863 has global ids 2^32 - 64 .. 2^32 - 1: out of bounds.
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS);
  EXPECT_EQ(c.state.fault_offset, (uint64_t{0xFFFFFFFFu} - 63) * 4);
  EXPECT_EQ(c.state.fault_workgroup_id[0], 67108863u);
  EXPECT_EQ(c.state.fault_local_id[0], 0u);
  // Workgroup 67108864 wraps to global ids 0 .. 63.
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(out[i], 10 * i + 1) << i;
}

TEST(SimKernelAbi, FirstReadOutOfBoundsIsReportedAndReadsZero) {
  const uint32_t count[3] = {1, 1, 1};
  U32s in(20, 9), out(64, 0);
  // c0 = 64: the kernel loads every element of a 20-element binding.
  Call c({&in, &out}, {HAL_SIM_BINDING_READ_ONLY, 0}, {64}, count, kFlat, 0, 1);
  c.Run(abi_copy_plus);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_READ_OUT_OF_BOUNDS);
  EXPECT_EQ(c.state.fault_binding, 0u);
  EXPECT_EQ(c.state.fault_offset, 80u);
  EXPECT_EQ(c.state.fault_local_id[0], 20u);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(out[i], i < 20 ? 10u : 1u) << i;
}

// Execution goes on after a fault: only the faulting accesses are dropped.
TEST(SimKernelAbi, ExecutionContinuesAfterTheFirstFault) {
  const uint32_t count[3] = {2, 1, 1};
  U32s out(128, 0);
  Call c({&out}, {0}, {1000}, count, kFlat, 0, 2);
  c.Run(abi_gaps);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS);
  EXPECT_EQ(c.state.fault_offset, (2u + 1000u) * 4);
  EXPECT_EQ(c.state.fault_workgroup_id[0], 0u);
  EXPECT_EQ(c.state.fault_local_id[0], 2u);
  for (uint32_t i = 0; i < 128; ++i) {
    ASSERT_EQ(out[i], i % 3 == 2 ? 0u : i + 1) << i;
  }
}

TEST(SimKernelAbi, StoreToReadOnlyBindingIsReportedAndNotMade) {
  const uint32_t count[3] = {1, 1, 1};
  U32s in(64, 1), out(64, 0);
  Call c({&in, &out}, {HAL_SIM_BINDING_READ_ONLY, HAL_SIM_BINDING_READ_ONLY},
         {64}, count, kFlat, 0, 1);
  c.Run(abi_copy_plus);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_WRITE_READ_ONLY);
  EXPECT_EQ(c.state.fault_binding, 1u);
  EXPECT_EQ(c.state.fault_offset, 0u);
  EXPECT_EQ(out, U32s(64, 0));
}

TEST(SimKernelAbi, MisalignedBindingIsReportedForLoadsAndAtomics) {
  const uint32_t count[3] = {1, 1, 1};
  std::vector<uint32_t> raw(80, 0);
  U32s out(64, 0);
  Call c({&raw, &out}, {HAL_SIM_BINDING_READ_ONLY, 0}, {64}, count, kFlat, 0,
         1);
  c.data[0] = reinterpret_cast<uint8_t*>(raw.data()) + 2;  // misaligned
  c.Run(abi_copy_plus);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_MISALIGNED);
  EXPECT_EQ(c.state.fault_binding, 0u);
  EXPECT_EQ(c.state.fault_offset, 0u);

  Call a({&raw}, {0}, {}, count, kFlat, 0, 1);
  a.data[0] = reinterpret_cast<uint8_t*>(raw.data()) + 1;
  a.Run(abi_atomic);
  EXPECT_EQ(a.state.fault, HAL_SIM_FAULT_MISALIGNED);
}

TEST(SimKernelAbi, AtomicsInBoundsAddAndOutOfBoundsFault) {
  const uint32_t count[3] = {2, 1, 1};
  U32s b(100, 5);
  Call c({&b}, {0}, {}, count, kFlat, 0, 2);
  c.Run(abi_atomic);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS);
  EXPECT_EQ(c.state.fault_offset, 400u);
  EXPECT_EQ(b, U32s(100, 6));
}

TEST(SimKernelAbi, AccessToAMissingBindingIsReported) {
  const uint32_t count[3] = {1, 1, 1}, one[3] = {1, 1, 1};
  U32s b(4, 0);
  Call c({&b}, {0}, {}, count, one, 0, 1);  // the kernel declares 2
  c.Run(abi_store_b1);
  EXPECT_EQ(c.state.fault, HAL_SIM_FAULT_NO_SUCH_BINDING);
  EXPECT_EQ(c.state.fault_binding, 1u);
  EXPECT_EQ(b, U32s(4, 0));
}

// Through the HAL: the test kernels' `fill` and `write_ids` with faults in
// several workgroups, on 1 and 4 workers: the same status and the same
// memory, the lowest faulting workgroup named.
struct Outcome {
  std::string status;
  U32s memory;
};

Outcome Dispatch(const std::string& uri, const char* entry,
                 const uint32_t count[3], const U32s& constants,
                 uint32_t elements) {
  Outcome o;
  auto device = DefaultDriverRegistry().CreateDevice(uri);
  EXPECT_TRUE(device.ok()) << device.status().ToString();
  if (!device.ok()) return o;
  auto cache = (*device)->CreateExecutableCache();
  auto bytes = cts::ReadTestKernels(ExecutableFormat::kSim);
  EXPECT_TRUE(cache.ok() && bytes.ok());
  if (!cache.ok() || !bytes.ok()) return o;
  ExecutableParams params;
  params.data = *bytes;
  auto exe = (*cache)->Prepare(params);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return o;
  BufferParams bp;
  bp.type = MemoryType::kHostLocal | MemoryType::kHostCoherent;
  bp.usage = BufferUsage::kDefault | BufferUsage::kMapping;
  auto buffer = (*device)->allocator()->AllocateBuffer(bp, elements * 4);
  EXPECT_TRUE(buffer.ok());
  if (!buffer.ok()) return o;
  const uint32_t zero = 0;
  EXPECT_TRUE((*buffer)->MapFill(0, elements * 4, &zero, 4).ok());
  auto done = (*device)->CreateSemaphore(0);
  EXPECT_TRUE(done.ok());
  if (!done.ok()) return o;
  BufferRef bindings[1] = {BufferRef::Direct(buffer->get())};
  DispatchParams d;
  d.executable = exe->get();
  d.entry_point = *(*exe)->LookupFunction(entry);
  for (int i = 0; i < 3; ++i) d.workgroup_count[i] = count[i];
  d.constants = constants;
  d.bindings = bindings;
  SemaphorePoint signal{done->get(), 1};
  Status st = (*device)->QueueDispatch(1, {}, {&signal, 1}, d);
  if (st.ok()) st = (*done)->Wait(1, Timeout::Infinite());
  o.status = st.ToString();
  o.memory.resize(elements);
  EXPECT_TRUE((*buffer)->MapRead(0, o.memory.data(), elements * 4).ok());
  return o;
}

TEST(SimDispatchRanges, LowestFaultingWorkgroupIsReportedForAnyWorkerCount) {
  // fill (64 x 1 x 1) of 1000 elements into a 300-element binding: elements
  // 300.. fault, the first in workgroup (4, 0, 0) invocation (44, 0, 0).
  const uint32_t fill_count[3] = {16, 1, 1};
  Outcome one =
      Dispatch("sim://?workers=1", "fill", fill_count, {7, 1000}, 300);
  EXPECT_NE(one.status.find("workgroup (4, 0, 0) invocation (44, 0, 0)"),
            std::string::npos)
      << one.status;
  EXPECT_NE(one.status.find("offset 1200"), std::string::npos) << one.status;
  EXPECT_EQ(one.memory, U32s(300, 7));
  for (int workers : {2, 3, 4}) {
    Outcome many = Dispatch("sim://?workers=" + std::to_string(workers), "fill",
                            fill_count, {7, 1000}, 300);
    EXPECT_EQ(many.status, one.status) << workers << " workers";
    EXPECT_EQ(many.memory, one.memory) << workers << " workers";
  }

  // write_ids (2 x 2 x 1) over 8 x 4 x 2 workgroups into 37 elements: the
  // ids 37.. fault; the lowest is workgroup (5, 0, 1) = id 37.
  const uint32_t ids_count[3] = {8, 4, 2};
  Outcome ids1 =
      Dispatch("sim://?workers=1", "write_ids", ids_count, {8, 4}, 37);
  EXPECT_NE(ids1.status.find("workgroup (5, 0, 1) invocation (0, 0, 0)"),
            std::string::npos)
      << ids1.status;
  for (uint32_t i = 0; i < 37; ++i) EXPECT_EQ(ids1.memory[i], i + 1) << i;
  for (int workers : {2, 4}) {
    Outcome many = Dispatch("sim://?workers=" + std::to_string(workers),
                            "write_ids", ids_count, {8, 4}, 37);
    EXPECT_EQ(many.status, ids1.status) << workers << " workers";
    EXPECT_EQ(many.memory, ids1.memory) << workers << " workers";
  }
}

}  // namespace
}  // namespace hal::sim
