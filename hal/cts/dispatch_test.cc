// CTS: dispatch of the test kernels (hal/cts/kernels/): constants, bindings
// and sub-ranges, workgroup ids, direct and indirect counts, ordering with
// transfers and barriers, binding tables, validation, and (where the driver
// checks them) out-of-bounds kernel accesses.
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "hal/cts/cts.h"
#include "hal/cts/test_kernels.h"

namespace hal::cts {
namespace {

using U32s = std::vector<uint32_t>;
using Refs = std::vector<BufferRef>;
using Mode = CommandBufferMode;
using Category = CommandCategory;

std::string Code(const Status& s) { return StatusCodeName(s.code()); }

struct Counts {
  uint32_t x = 1, y = 1, z = 1;
};

class Dispatch : public CtsTest {
 protected:
  void SetUp() override {
    CtsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (!HasTag(kTagDispatch)) GTEST_SKIP() << "backend lacks tag 'dispatch'";
    CTS_ASSERT_OK_AND_ASSIGN(cache_, device()->CreateExecutableCache());
    std::string tried;
    for (ExecutableFormat format : ProducedTestKernelFormats()) {
      tried += std::string(" ") + ExecutableFormatName(format);
      if (!cache_->CanPrepareFormat(format)) continue;
      CTS_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> bytes,
                               ReadTestKernels(format));
      ExecutableParams params;
      params.data = bytes;
      CTS_ASSERT_OK_AND_ASSIGN(exe_, cache_->Prepare(params));
      return;
    }
    FAIL() << "the device prepares none of the produced test-kernel formats:"
           << tried;
  }

  uint32_t Entry(const char* name) {
    auto r = exe_->LookupFunction(name);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : ~0u;
  }

  // Host-visible buffer with every dispatch usage, holding `values`.
  Ref<Buffer> U32Buffer(const U32s& values) {
    Ref<Buffer> b = NewHostBuffer(values.size() * 4);
    if (b && !values.empty()) {
      Status s = b->MapWrite(0, values.data(), values.size() * 4);
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    return b;
  }
  Ref<Buffer> Filled(size_t count, uint32_t value) {
    return U32Buffer(U32s(count, value));
  }
  U32s Read(Buffer* b, DeviceSize offset = 0,
            DeviceSize length = kWholeBuffer) {
    std::vector<uint8_t> bytes = ReadBack(b, offset, length);
    U32s out(bytes.size() / 4);
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }

  DispatchParams Params(const char* name, Counts c, const U32s& constants,
                        const Refs& bindings) {
    DispatchParams p;
    p.executable = exe_.get();
    p.entry_point = Entry(name);
    p.workgroup_count[0] = c.x;
    p.workgroup_count[1] = c.y;
    p.workgroup_count[2] = c.z;
    p.constants = constants;
    p.bindings = bindings;
    return p;
  }

  // queue_dispatch on queue 0 and a wait for it.
  Status Run(const char* name, Counts c, const U32s& constants,
             const Refs& bindings) {
    auto s = NewSemaphore(0);
    HAL_RETURN_IF_ERROR(device()->QueueDispatch(
        1, {}, Points{{s.get(), 1}}, Params(name, c, constants, bindings)));
    return WaitFor(s.get(), 1);
  }

  StatusOr<Ref<CommandBuffer>> NewCommandBuffer(Mode mode,
                                                uint32_t binding_capacity = 0) {
    return device()->CreateCommandBuffer(mode, Category::kAny, 1,
                                         binding_capacity);
  }

  Status SubmitAndWait(CommandBuffer* cb, BindingTable table = {}) {
    auto s = NewSemaphore(0);
    HAL_RETURN_IF_ERROR(
        device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb, table));
    return WaitFor(s.get(), 1);
  }

  Ref<ExecutableCache> cache_;
  Ref<::hal::Executable> exe_;
};

TEST_F(Dispatch, FillUsesConstants) {
  auto b = Filled(1024, 0xFFFFFFFF);
  ASSERT_TRUE(b);
  // 16 workgroups x 64 = 1024 invocations, 1000 of them store.
  CTS_ASSERT_OK(
      Run("fill", {16}, {0xABCD1234u, 1000}, {BufferRef::Direct(b.get())}));
  U32s got = Read(b.get());
  U32s want(1024, 0xABCD1234u);
  for (size_t i = 1000; i < 1024; ++i) want[i] = 0xFFFFFFFF;
  EXPECT_EQ(got, want);
}

TEST_F(Dispatch, ScaleAndOffsetConstants) {
  U32s in(200);
  for (uint32_t i = 0; i < 200; ++i) in[i] = i;
  auto src = U32Buffer(in), dst = Filled(200, 0);
  ASSERT_TRUE(src && dst);
  for (U32s k : {U32s{3, 7, 200}, U32s{0xFFFFFFFFu, 5, 200}, U32s{2, 0, 100}}) {
    CTS_ASSERT_OK(dst->MapZero(0, kWholeBuffer));
    CTS_ASSERT_OK(
        Run("scale_offset", {4}, k,
            {BufferRef::Direct(src.get()), BufferRef::Direct(dst.get())}));
    U32s got = Read(dst.get());
    for (uint32_t i = 0; i < 200; ++i) {
      uint32_t want = i < k[2] ? i * k[0] + k[1] : 0;
      ASSERT_EQ(got[i], want) << "element " << i << " with scale " << k[0];
    }
  }
}

TEST_F(Dispatch, BindingSubRanges) {
  // abs_i32 over [16, 16+32) elements of one buffer, writing 32 elements at
  // byte offset 256 of another: the kernel sees element 0 at the range start.
  U32s in(128);
  for (int i = 0; i < 128; ++i) in[i] = static_cast<uint32_t>(i % 2 ? -i : i);
  auto src = U32Buffer(in), dst = Filled(256, 0xEEEEEEEE);
  ASSERT_TRUE(src && dst);
  CTS_ASSERT_OK(Run("abs_i32", {1}, {32},
                    {BufferRef::Direct(src.get(), 16 * 4, 32 * 4),
                     BufferRef::Direct(dst.get(), 256, 32 * 4)}));
  U32s got = Read(dst.get());
  for (int i = 0; i < 256; ++i) {
    uint32_t want =
        (i >= 64 && i < 96) ? static_cast<uint32_t>(16 + i - 64) : 0xEEEEEEEE;
    ASSERT_EQ(got[i], want) << "element " << i;
  }
  // A subspan buffer adds its own offset.
  CTS_ASSERT_OK_AND_ASSIGN(Ref<Buffer> span, dst->Subspan(512, 128));
  CTS_ASSERT_OK(Run("fill", {1}, {7, 32}, {BufferRef::Direct(span.get())}));
  got = Read(dst.get());
  for (int i = 128; i < 160; ++i) ASSERT_EQ(got[i], 7u) << i;
  EXPECT_EQ(got[127], 0xEEEEEEEE);
  EXPECT_EQ(got[160], 0xEEEEEEEE);
}

TEST_F(Dispatch, FourBindings) {
  // sum3: b3[i] = b0[i] + b1[i] + b2[i] for i < 100, three read-only inputs
  // (one of them a sub-range) and one output.
  U32s a(128), b(128), c(160);
  for (uint32_t i = 0; i < 128; ++i) {
    a[i] = i;
    b[i] = 1000 * i;
    c[i + 32] = 0xFFFFFFFFu;  // -1, wrapping
  }
  auto ba = U32Buffer(a), bb = U32Buffer(b), bc = U32Buffer(c);
  auto out = Filled(128, 0xEEEEEEEE);
  ASSERT_TRUE(ba && bb && bc && out);
  CTS_ASSERT_OK(Run("sum3", {2}, {100},
                    {BufferRef::Direct(ba.get()), BufferRef::Direct(bb.get()),
                     BufferRef::Direct(bc.get(), 32 * 4, 128 * 4),
                     BufferRef::Direct(out.get())}));
  U32s got = Read(out.get());
  for (uint32_t i = 0; i < 128; ++i) {
    ASSERT_EQ(got[i], i < 100 ? 1001 * i - 1 : 0xEEEEEEEE) << "element " << i;
  }
}

TEST_F(Dispatch, ThirtyTwoWorkgroupsWriteTheirIds) {
  for (Counts c : {Counts{32, 1, 1}, Counts{4, 4, 2}, Counts{1, 2, 16}}) {
    auto b = Filled(40, 0);
    ASSERT_TRUE(b);
    CTS_ASSERT_OK(
        Run("write_ids", c, {c.x, c.y}, {BufferRef::Direct(b.get())}));
    U32s got = Read(b.get());
    for (uint32_t i = 0; i < 40; ++i) {
      ASSERT_EQ(got[i], i < 32 ? i + 1 : 0u)
          << "element " << i << " of grid " << c.x << "x" << c.y << "x" << c.z;
    }
  }
}

TEST_F(Dispatch, TwoEntryPointsOfOneExecutable) {
  uint32_t inc = Entry("increment"), dec = Entry("decrement");
  EXPECT_NE(inc, dec);
  auto b = Filled(100, 10);
  ASSERT_TRUE(b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot));
  U32s k = {100};
  Refs bind = {BufferRef::Direct(b.get())};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->Dispatch(Params("increment", {2}, k, bind)));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(Params("increment", {2}, k, bind)));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(Params("decrement", {2}, k, bind)));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  EXPECT_EQ(Read(b.get()), U32s(100, 11));
}

TEST_F(Dispatch, IndirectCountWrittenByUpdate) {
  auto params = Filled(3, 0), b = Filled(32, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(params && b && s);
  const U32s counts = {8, 2, 2};  // 32 workgroups
  CTS_ASSERT_OK(device()->QueueUpdate(1, {}, Points{{s.get(), 1}},
                                      counts.data(), params.get(), 0, 12));
  BufferRef indirect = BufferRef::Direct(params.get());
  U32s k = {8, 2};
  Refs bind = {BufferRef::Direct(b.get())};
  DispatchParams p = Params("write_ids", {}, k, bind);
  p.indirect_workgroup_count = &indirect;
  CTS_ASSERT_OK(device()->QueueDispatch(1, Points{{s.get(), 1}},
                                        Points{{s.get(), 2}}, p));
  CTS_ASSERT_OK(WaitFor(s.get(), 2));
  U32s got = Read(b.get());
  for (uint32_t i = 0; i < 32; ++i) ASSERT_EQ(got[i], i + 1) << i;
}

TEST_F(Dispatch, IndirectCountWrittenByFill) {
  auto params = NewHostBuffer(12), b = Filled(30, 0);
  ASSERT_TRUE(params && b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot));
  const uint32_t three = 3;  // {3, 3, 3}: 27 workgroups
  BufferRef indirect = BufferRef::Direct(params.get());
  U32s k = {3, 3};
  Refs bind = {BufferRef::Direct(b.get())};
  DispatchParams p = Params("write_ids", {}, k, bind);
  p.indirect_workgroup_count = &indirect;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(params.get()), &three, 4));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(p));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  U32s got = Read(b.get());
  for (uint32_t i = 0; i < 30; ++i) ASSERT_EQ(got[i], i < 27 ? i + 1 : 0u) << i;
}

TEST_F(Dispatch, IndirectCountWrittenByEarlierDispatch) {
  auto params = Filled(3, 0xFFFF), b = Filled(1100, 0);
  ASSERT_TRUE(params && b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot));
  U32s produce = {1000, 1, 1};  // ceil(1000 / 64) = 16 workgroups
  Refs produce_bind = {BufferRef::Direct(params.get())};
  U32s fill = {5, 1000};
  Refs fill_bind = {BufferRef::Direct(b.get())};
  BufferRef indirect = BufferRef::Direct(params.get());
  DispatchParams p = Params("fill", {}, fill, fill_bind);
  p.indirect_workgroup_count = &indirect;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(
      cb->Dispatch(Params("produce_counts", {1}, produce, produce_bind)));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(p));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  EXPECT_EQ(Read(params.get()), (U32s{16, 1, 1}));
  U32s got = Read(b.get());
  for (uint32_t i = 0; i < 1100; ++i)
    ASSERT_EQ(got[i], i < 1000 ? 5u : 0u) << i;
}

// A simulator runs every workgroup on a CPU and refuses a dispatch of more
// than 2^24 of them (sim/core/dispatch_cap.h), so a garbage indirect count
// fails the operation at once instead of running for hours.
TEST_F(Dispatch, IndirectCountBeyondTheSimulatorCapFails) {
  CTS_REQUIRE_TAG(kTagDispatchCap);
  auto params = U32Buffer({65535, 65535, 1}), b = Filled(32, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(params && b && s);
  BufferRef indirect = BufferRef::Direct(params.get());
  U32s k = {1, 1};
  Refs bind = {BufferRef::Direct(b.get())};
  DispatchParams p = Params("write_ids", {}, k, bind);
  p.indirect_workgroup_count = &indirect;
  CTS_ASSERT_OK(device()->QueueDispatch(1, {}, Points{{s.get(), 1}}, p));
  Status done = s->Wait(1, Timeout::After(kCtsTimeout));
  EXPECT_EQ(done.code(), StatusCode::kResourceExhausted) << done.ToString();
  EXPECT_NE(done.ToString().find("4294836225 workgroups"), std::string::npos)
      << done.ToString();
  EXPECT_EQ(Read(b.get()), U32s(32, 0)) << "no workgroup ran";
}

TEST_F(Dispatch, SubAllocatedIndirectParams) {
  // The counts live at byte 80 of a 256-byte allocation, reached through a
  // subspan at 64 plus a reference offset of 16. Everything else holds a
  // count far too large, so a driver that drops either offset fails.
  auto whole = Filled(64, 0x7FFFFFFF), b = Filled(40, 0);
  ASSERT_TRUE(whole && b);
  const U32s counts = {4, 2, 1};
  CTS_ASSERT_OK(whole->MapWrite(80, counts.data(), 12));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<Buffer> span, whole->Subspan(64, 64));
  BufferRef indirect = BufferRef::Direct(span.get(), 16);
  U32s k = {4, 2};
  Refs bind = {BufferRef::Direct(b.get())};
  DispatchParams p = Params("write_ids", {}, k, bind);
  p.indirect_workgroup_count = &indirect;
  auto s = NewSemaphore(0);
  CTS_ASSERT_OK(device()->QueueDispatch(1, {}, Points{{s.get(), 1}}, p));
  CTS_ASSERT_OK(WaitFor(s.get(), 1));
  U32s got = Read(b.get());
  for (uint32_t i = 0; i < 40; ++i) ASSERT_EQ(got[i], i < 8 ? i + 1 : 0u) << i;

  // The same through a binding-table slot whose entry has its own offset.
  CTS_ASSERT_OK(b->MapZero(0, kWholeBuffer));
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot, 2));
  BufferRef slot_indirect = BufferRef::Slot(0, 8);
  Refs slot_bind = {BufferRef::Slot(1)};
  DispatchParams ps = Params("write_ids", {}, k, slot_bind);
  ps.indirect_workgroup_count = &slot_indirect;
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->Dispatch(ps));
  CTS_ASSERT_OK(cb->End());
  Binding table[] = {{span.get(), 8, 32}, {b.get(), 0, kWholeBuffer}};
  CTS_ASSERT_OK(SubmitAndWait(cb.get(), table));
  got = Read(b.get());
  for (uint32_t i = 0; i < 40; ++i) ASSERT_EQ(got[i], i < 8 ? i + 1 : 0u) << i;
}

TEST_F(Dispatch, UpdateThenDispatch) {
  auto src = Filled(64, 0), dst = Filled(64, 0);
  ASSERT_TRUE(src && dst);
  U32s data(64);
  for (uint32_t i = 0; i < 64; ++i) data[i] = i * i;
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot));
  U32s k = {64};
  Refs bind = {BufferRef::Direct(src.get()), BufferRef::Direct(dst.get())};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(
      cb->UpdateBuffer(data.data(), BufferRef::Direct(src.get(), 0, 256)));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(Params("copy", {1}, k, bind)));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  EXPECT_EQ(Read(dst.get()), data);
}

TEST_F(Dispatch, DispatchBarrierDispatch) {
  auto a = Filled(300, 0), b = Filled(300, 0);
  ASSERT_TRUE(a && b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot));
  U32s iota = {100, 300}, scale = {2, 1, 300};
  Refs iota_bind = {BufferRef::Direct(a.get())};
  Refs scale_bind = {BufferRef::Direct(a.get()), BufferRef::Direct(b.get())};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->Dispatch(Params("iota", {5}, iota, iota_bind)));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(Params("scale_offset", {5}, scale, scale_bind)));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  U32s got = Read(b.get());
  for (uint32_t i = 0; i < 300; ++i) ASSERT_EQ(got[i], (i + 100) * 2 + 1) << i;
}

TEST_F(Dispatch, FillDispatchDispatch) {
  auto b = NewDeviceBuffer(128 * 4);
  ASSERT_TRUE(b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot));
  const uint32_t forty = 40;
  U32s k = {128};
  Refs bind = {BufferRef::Direct(b.get())};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->FillBuffer(BufferRef::Direct(b.get()), &forty, 4));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(Params("increment", {2}, k, bind)));
  CTS_ASSERT_OK(cb->ExecutionBarrier());
  CTS_ASSERT_OK(cb->Dispatch(Params("increment", {2}, k, bind)));
  CTS_ASSERT_OK(cb->End());
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  EXPECT_EQ(Read(b.get()), U32s(128, 42));
}

TEST_F(Dispatch, QueueOperationsOrderedBySemaphores) {
  // fill -> dispatch -> dispatch as separate queue operations, across queues
  // when there are several.
  auto b = Filled(64, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(b && s);
  QueueAffinity other = device()->queue_count() > 1 ? 2 : 1;
  const uint32_t nine = 9;
  CTS_ASSERT_OK(device()->QueueFill(1, {}, Points{{s.get(), 1}}, b.get(), 0,
                                    kWholeBuffer, &nine, 4));
  U32s k = {64};
  Refs bind = {BufferRef::Direct(b.get())};
  // Submitted before its wait can be met (wait-before-signal). Any other
  // order gives another result: 9 + 1, 20, or 9.
  CTS_ASSERT_OK(device()->QueueDispatch(1, Points{{s.get(), 2}},
                                        Points{{s.get(), 3}},
                                        Params("increment", {1}, k, bind)));
  U32s fill = {20, 64};
  CTS_ASSERT_OK(device()->QueueDispatch(other, Points{{s.get(), 1}},
                                        Points{{s.get(), 2}},
                                        Params("fill", {1}, fill, bind)));
  CTS_ASSERT_OK(WaitFor(s.get(), 3));
  EXPECT_EQ(Read(b.get()), U32s(64, 21));
}

TEST_F(Dispatch, AllocaFillDispatchDealloca) {
  CTS_REQUIRE_TAG(kTagAlloca);
  auto host = Filled(256, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(host && s);
  BufferParams bp;
  bp.type = MemoryType::kDeviceLocal;
  bp.usage = BufferUsage::kDefault;
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<Buffer> b,
      device()->QueueAlloca(1, {}, Points{{s.get(), 1}}, bp, 1024));
  const uint32_t five = 5;
  CTS_ASSERT_OK(device()->QueueFill(1, Points{{s.get(), 1}},
                                    Points{{s.get(), 2}}, b.get(), 0,
                                    kWholeBuffer, &five, 4));
  U32s k = {3, 4, 256};
  Refs bind = {BufferRef::Direct(b.get()), BufferRef::Direct(host.get())};
  CTS_ASSERT_OK(device()->QueueDispatch(1, Points{{s.get(), 2}},
                                        Points{{s.get(), 3}},
                                        Params("scale_offset", {4}, k, bind)));
  CTS_ASSERT_OK(device()->QueueDealloca(1, Points{{s.get(), 3}},
                                        Points{{s.get(), 4}}, b.get()));
  CTS_ASSERT_OK(WaitFor(s.get(), 4));
  EXPECT_EQ(Read(host.get()), U32s(256, 19));
  EXPECT_EQ(b->state(), BufferState::kFreed);
  // A dispatch that uses the freed buffer is refused.
  CTS_EXPECT_CODE(
      kFailedPrecondition,
      device()->QueueDispatch(1, {}, {}, Params("scale_offset", {4}, k, bind)));
}

TEST_F(Dispatch, ReusableCommandBufferWithDifferentBindingTables) {
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kReusable, 2));
  U32s k = {10, 3, 64};
  Refs bind = {BufferRef::Slot(0), BufferRef::Slot(1)};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->Dispatch(Params("scale_offset", {1}, k, bind)));
  CTS_ASSERT_OK(cb->End());
  std::vector<Ref<Buffer>> outs;
  for (uint32_t round = 0; round < 3; ++round) {
    auto in = Filled(64, round + 1), out = Filled(80, 0);
    ASSERT_TRUE(in && out);
    // Round 2 writes through a table entry with an offset.
    DeviceSize offset = round == 2 ? 64 : 0;
    Binding table[] = {{in.get(), 0, kWholeBuffer}, {out.get(), offset, 256}};
    CTS_ASSERT_OK(SubmitAndWait(cb.get(), table));
    U32s got = Read(out.get());
    for (uint32_t i = 0; i < 80; ++i) {
      bool written = i >= offset / 4 && i < offset / 4 + 64;
      ASSERT_EQ(got[i], written ? (round + 1) * 10 + 3 : 0u)
          << "round " << round << " element " << i;
    }
    outs.push_back(out);
  }
  // A table whose entry lacks the storage usage is refused at submission.
  BufferParams bp;
  bp.type = MemoryType::kHostLocal;
  bp.usage = BufferUsage::kTransfer | BufferUsage::kMapping;
  CTS_ASSERT_OK_AND_ASSIGN(Ref<Buffer> plain,
                           allocator()->AllocateBuffer(bp, 256));
  Binding bad[] = {{plain.get(), 0, kWholeBuffer},
                   {outs[0].get(), 0, kWholeBuffer}};
  auto s = NewSemaphore(0);
  CTS_EXPECT_CODE(
      kInvalidArgument,
      device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(), bad));
  // A misaligned entry offset too.
  Binding misaligned[] = {{outs[1].get(), 0, kWholeBuffer},
                          {outs[0].get(), 2, 64}};
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueExecute(1, {}, Points{{s.get(), 1}}, cb.get(),
                                         misaligned));
  EXPECT_EQ(*s->Query(), 0u);
}

TEST_F(Dispatch, ZeroWorkgroupDispatchStillSignals) {
  auto b = Filled(64, 0x55);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(b && s);
  U32s k = {1, 64};
  Refs bind = {BufferRef::Direct(b.get())};
  CTS_ASSERT_OK(device()->QueueDispatch(1, {}, Points{{s.get(), 1}},
                                        Params("fill", {0, 1, 1}, k, bind)));
  CTS_ASSERT_OK(device()->QueueDispatch(1, Points{{s.get(), 1}},
                                        Points{{s.get(), 2}},
                                        Params("fill", {4, 0, 1}, k, bind)));
  // Indirect zero counts as well.
  auto params = Filled(3, 0);
  BufferRef indirect = BufferRef::Direct(params.get());
  DispatchParams p = Params("fill", {}, k, bind);
  p.indirect_workgroup_count = &indirect;
  CTS_ASSERT_OK(device()->QueueDispatch(1, Points{{s.get(), 2}},
                                        Points{{s.get(), 3}}, p));
  CTS_ASSERT_OK(WaitFor(s.get(), 3));
  EXPECT_EQ(Read(b.get()), U32s(64, 0x55));
}

// An indirect count above kMaxWorkgroupCount fails the dispatch with
// OUT_OF_RANGE (hal/command_buffer.h), and nothing runs: a count read from
// memory the program never wrote must not launch billions of workgroups.
// ("fill" is bounded by its limit constant, so a driver that launched it
// anyway writes only inside the buffer.)
TEST_F(Dispatch, IndirectCountAboveTheLimitFails) {
  auto b = Filled(64, 0x55), params = Filled(3, 1);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(b && params && s);
  const U32s counts = {kMaxWorkgroupCount + 1, 1, 1};
  CTS_ASSERT_OK(device()->QueueUpdate(1, {}, Points{{s.get(), 1}},
                                      counts.data(), params.get(), 0, 12));
  U32s k = {1, 64};
  Refs bind = {BufferRef::Direct(b.get())};
  BufferRef indirect = BufferRef::Direct(params.get());
  DispatchParams p = Params("fill", {}, k, bind);
  p.indirect_workgroup_count = &indirect;
  CTS_ASSERT_OK(device()->QueueDispatch(1, Points{{s.get(), 1}},
                                        Points{{s.get(), 2}}, p));
  Status st = WaitFor(s.get(), 2);
  EXPECT_EQ(Code(st), "OUT_OF_RANGE") << st.ToString();
  EXPECT_EQ(Read(b.get()), U32s(64, 0x55)) << "the dispatch ran";
}

TEST_F(Dispatch, AtomicCounter) {
  auto b = Filled(2, 0);
  ASSERT_TRUE(b);
  // 40 workgroups x 64 invocations, each adding 1 and 3.
  CTS_ASSERT_OK(
      Run("atomic_count", {10, 2, 2}, {3}, {BufferRef::Direct(b.get())}));
  EXPECT_EQ(Read(b.get()), (U32s{2560, 7680}));
}

TEST_F(Dispatch, LongRunningKernelCompletes) {
  // Bounded by its iteration constant; the result is the LCG state.
  const uint32_t iterations = 20000, count = 256;
  auto b = Filled(count, 0);
  ASSERT_TRUE(b);
  CTS_ASSERT_OK(Run("long_running", {4}, {iterations, count},
                    {BufferRef::Direct(b.get())}));
  U32s got = Read(b.get());
  for (uint32_t i = 0; i < count; i += 37) {
    uint32_t x = i;
    for (uint32_t k = 0; k < iterations; ++k) x = x * 1664525u + 1013904223u;
    ASSERT_EQ(got[i], x) << i;
  }
}

TEST_F(Dispatch, RecordingValidation) {
  auto b = Filled(64, 0);
  ASSERT_TRUE(b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kOneShot, 1));
  CTS_ASSERT_OK(cb->Begin());
  U32s one = {1}, two = {1, 64};
  Refs bind = {BufferRef::Direct(b.get())};
  DispatchParams p = Params("fill", {1}, two, bind);
  CTS_EXPECT_OK(cb->Dispatch(p));

  DispatchParams bad = p;
  bad.executable = nullptr;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  bad = p;
  bad.entry_point = exe_->function_count();
  CTS_EXPECT_CODE(kOutOfRange, cb->Dispatch(bad));
  bad = p;
  bad.constants = one;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  Refs none, extra = {BufferRef::Direct(b.get()), BufferRef::Direct(b.get())};
  bad = p;
  bad.bindings = none;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  bad.bindings = extra;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  bad = p;
  bad.workgroup_count[1] = kMaxWorkgroupCount + 1;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  // Ranges and alignment.
  Refs misaligned = {BufferRef::Direct(b.get(), 2)};
  bad = p;
  bad.bindings = misaligned;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  Refs outside = {BufferRef::Direct(b.get(), 256, 4)};
  bad.bindings = outside;
  CTS_EXPECT_CODE(kOutOfRange, cb->Dispatch(bad));
  Refs slot_over = {BufferRef::Slot(1)};
  bad.bindings = slot_over;  // capacity is 1
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  // Usage: a writable binding needs DISPATCH_STORAGE_WRITE; a read-only one
  // only DISPATCH_STORAGE_READ.
  BufferParams bp;
  bp.type = MemoryType::kHostLocal;
  bp.usage = BufferUsage::kTransfer | BufferUsage::kMapping |
             BufferUsage::kDispatchStorageRead;
  CTS_ASSERT_OK_AND_ASSIGN(Ref<Buffer> read_only,
                           allocator()->AllocateBuffer(bp, 256));
  Refs ro = {BufferRef::Direct(read_only.get())};
  bad.bindings = ro;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  Refs copy_bind = {BufferRef::Direct(read_only.get()),
                    BufferRef::Direct(b.get())};
  CTS_EXPECT_OK(cb->Dispatch(Params("copy", {1}, one, copy_bind)));
  // Indirect parameters: usage, size, alignment.
  bad = p;
  BufferRef no_usage = BufferRef::Direct(read_only.get());
  bad.indirect_workgroup_count = &no_usage;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  BufferRef too_small = BufferRef::Direct(b.get(), 248);
  bad.indirect_workgroup_count = &too_small;
  CTS_EXPECT_CODE(kOutOfRange, cb->Dispatch(bad));
  BufferRef unaligned = BufferRef::Direct(b.get(), 6);
  bad.indirect_workgroup_count = &unaligned;
  CTS_EXPECT_CODE(kInvalidArgument, cb->Dispatch(bad));
  BufferRef short_slot = BufferRef::Slot(0, 0, 8);
  bad.indirect_workgroup_count = &short_slot;
  CTS_EXPECT_CODE(kOutOfRange, cb->Dispatch(bad));
  CTS_ASSERT_OK(cb->End());
  CTS_EXPECT_CODE(kFailedPrecondition, cb->Dispatch(p));
  // Only the two valid dispatches were recorded.
  EXPECT_EQ(cb->commands().size(), 2u);
  // A transfer-only command buffer takes no dispatch.
  CTS_ASSERT_OK_AND_ASSIGN(
      Ref<CommandBuffer> transfer,
      device()->CreateCommandBuffer(Mode::kOneShot, Category::kTransfer, 1, 0));
  CTS_ASSERT_OK(transfer->Begin());
  CTS_EXPECT_CODE(kInvalidArgument, transfer->Dispatch(p));
}

TEST_F(Dispatch, QueueDispatchValidationChangesNothing) {
  auto b = Filled(64, 0);
  auto s = NewSemaphore(0);
  ASSERT_TRUE(b && s);
  U32s two = {1, 64};
  Refs slot = {BufferRef::Slot(0)};
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueDispatch(1, {}, Points{{s.get(), 1}},
                                          Params("fill", {1}, two, slot)));
  U32s one = {1};
  Refs bind = {BufferRef::Direct(b.get())};
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueDispatch(1, {}, Points{{s.get(), 1}},
                                          Params("fill", {1}, one, bind)));
  CTS_EXPECT_CODE(kInvalidArgument,
                  device()->QueueDispatch(0, {}, Points{{s.get(), 1}},
                                          Params("fill", {1}, two, bind)));
  EXPECT_EQ(*s->Query(), 0u);
  EXPECT_EQ(Read(b.get()), U32s(64, 0));
}

TEST_F(Dispatch, ExecutableOutlivesCacheAndCommandBufferKeepsIt) {
  auto b = Filled(64, 0);
  ASSERT_TRUE(b);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kReusable));
  U32s k = {4, 64};
  Refs bind = {BufferRef::Direct(b.get())};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->Dispatch(Params("fill", {1}, k, bind)));
  CTS_ASSERT_OK(cb->End());
  cache_.reset();
  exe_.reset();
  CTS_ASSERT_OK(SubmitAndWait(cb.get()));
  EXPECT_EQ(Read(b.get()), U32s(64, 4));
}

TEST_F(Dispatch, OutOfBoundsAccessIsReported) {
  CTS_REQUIRE_TAG(kTagDispatchBoundsChecks);
  auto b = Filled(64, 0);
  auto s = NewSemaphore(0), after = NewSemaphore(0);
  ASSERT_TRUE(b && s && after);
  // Element 16 is past a 64-byte binding range, though inside the buffer.
  U32s k = {16};
  Refs bind = {BufferRef::Direct(b.get(), 0, 64)};
  CTS_ASSERT_OK(device()->QueueDispatch(1, {}, Points{{s.get(), 1}},
                                        Params("store_at", {1}, k, bind)));
  // Work behind the failed dispatch fails with the same status.
  CTS_ASSERT_OK(device()->QueueBarrier(1, Points{{s.get(), 1}},
                                       Points{{after.get(), 1}}));
  Status st = WaitFor(s.get(), 1);
  EXPECT_EQ(Code(st), "OUT_OF_RANGE") << st.ToString();
  for (const char* needle :
       {"store_at", "binding 0", "offset 64", "write out of bounds"}) {
    EXPECT_NE(st.message().find(needle), std::string::npos)
        << "missing '" << needle << "' in " << st.ToString();
  }
  EXPECT_EQ(Code(WaitFor(after.get(), 1)), "OUT_OF_RANGE");
  EXPECT_EQ(Read(b.get()), U32s(64, 0));  // nothing was written

  // An out-of-bounds read, and a negative index, in a command buffer.
  auto out = Filled(1, 9);
  CTS_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb,
                           NewCommandBuffer(Mode::kReusable));
  U32s far = {1u << 30};
  Refs load_bind = {BufferRef::Direct(b.get()), BufferRef::Direct(out.get())};
  CTS_ASSERT_OK(cb->Begin());
  CTS_ASSERT_OK(cb->Dispatch(Params("load_at", {1}, far, load_bind)));
  CTS_ASSERT_OK(cb->End());
  st = SubmitAndWait(cb.get());
  EXPECT_EQ(Code(st), "OUT_OF_RANGE") << st.ToString();
  EXPECT_NE(st.message().find("read out of bounds"), std::string::npos)
      << st.ToString();
  U32s minus_one = {0xFFFFFFFFu};
  st = Run("store_at", {1}, minus_one, bind);
  EXPECT_EQ(Code(st), "OUT_OF_RANGE") << st.ToString();
  // In bounds, the same kernels work.
  U32s in_bounds = {15};
  CTS_EXPECT_OK(Run("store_at", {1}, in_bounds, bind));
  EXPECT_EQ(Read(b.get(), 60, 4), U32s{1});
}

TEST_F(Dispatch, StoreToReadOnlyBindingIsReported) {
  CTS_REQUIRE_TAG(kTagDispatchBoundsChecks);
  auto b = Filled(4, 3);
  ASSERT_TRUE(b);
  Status st = Run("store_read_only", {1}, {}, {BufferRef::Direct(b.get())});
  EXPECT_EQ(Code(st), "PERMISSION_DENIED") << st.ToString();
  EXPECT_NE(st.message().find("read-only"), std::string::npos) << st.ToString();
  EXPECT_EQ(Read(b.get()), U32s(4, 3));
}

}  // namespace
}  // namespace hal::cts
