// The AMDGPU driver's GPU-stream layer over HSA (drivers/gpu/gpu_api.h):
// one or more GPU agents (a logical device over several physical ones),
// with HAL work written as AQL packets.
//
// Streams are placed on the agents in turn, by pairs (the GPU layer creates
// each HAL queue's work stream and callback stream together), so HAL queue
// i runs on agent i % agents and queue affinity spreads work over the
// agents. Device buffers are suballocated from blocks (amdgpu_block_pool.h)
// placed on the first agent of the buffer's queue affinity and granted to
// that affinity's agents only (hsa_amd_agents_allow_access); executables and
// the device library are loaded on every agent, and a dispatch uses the
// kernel object of its stream's agent. Signals are system-wide, so a wait
// across agents is the same BARRIER_VALUE packet as within one.
//
// Each GpuStream is an HSA AQL queue written by the host (the design IREE
// moved to in 2026-04: host queues that turn queue operations into AQL
// packet streams), with one per-queue epoch signal:
//
//   * Every packet carries the barrier bit (a stream is in order) and the
//     epoch signal as its completion signal, which starts at kEpochBase and
//     drops by one per completed packet; so "the first n packets completed"
//     is `epoch < kEpochBase - n + 1`, and nothing else is allocated per
//     packet. Kernel arguments live in a ring of fixed-size slots indexed by
//     the absolute packet index (the seed's ringbuffers with absolute
//     indices): a slot is reused only once its packet completed.
//   * An event is (queue, epoch): recording writes no packet. A stream wait
//     on another queue's event is an AMD BARRIER_VALUE packet on that
//     queue's epoch signal, so a device->device edge needs no host round
//     trip.
//   * A host function is an async signal handler on the epoch (the work
//     before it completed) that runs the function and opens a gate signal,
//     and a BARRIER_AND packet on the gate that holds the work after it.
//     Gates are pooled per stream: reused once their barrier completed.
//   * Copies and fills are the device library's blit kernels
//     (device/amdgpu_blit_kernels.c), loaded on the agent at creation. A
//     copy from host memory the GPU cannot reach (pageable memory: an
//     update's payload) is copied now into the queue's staging ring
//     (amdgpu_ring.h: absolute positions, space reused once the epoch
//     passed the packet that used it), or for copies larger than the ring
//     into fine-grained memory freed once the packet completed.
//   * Indirect dispatch needs no host round trip: the device library's
//     patch kernel (device/amdgpu_dispatch_patch.c) runs as a dispatch
//     just before the target dispatch packet, reads the workgroup counts
//     from device memory, writes the target's grid and publishes its
//     header (LaunchKernelIndirect).
//   * Host waits re-check their condition after every hsa_signal_wait
//     return: HSA allows spurious returns.
//
// Packet writing: reserve with hsa_queue_add_write_index, write the body,
// store the 16-bit header last (release), then ring the doorbell. An
// indirect dispatch reserves two packets and leaves the second's header
// INVALID for the patch kernel to publish (AQL lets a packet be published
// after the doorbell that covers it).
//
// Thread safety: every method may be called from any thread (a queue's
// packets are written under its lock).
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "drivers/amdgpu/amdgpu_block_pool.h"
#include "drivers/amdgpu/amdgpu_dynamic_symbols.h"
#include "drivers/gpu/gpu_api.h"

namespace hal::amdgpu {

struct HsaStream;

class HsaApi final : public gpu::GpuApi {
 public:
  // The agents' memory pools and device library; `gpus` is not empty.
  static StatusOr<std::shared_ptr<HsaApi>> Create(
      std::shared_ptr<const HsaSymbols> syms, std::vector<hsa_agent_t> gpus,
      hsa_agent_t cpu);
  ~HsaApi() override;

  const HsaSymbols* syms() const { return syms_.get(); }
  size_t agent_count() const { return agents_.size(); }
  // The agent a stream's packets run on (its index in `gpus`).
  static size_t StreamAgent(gpu::GpuStream stream);

  const char* name() const override { return "amdgpu"; }
  HAL_GPU_API_OVERRIDES
  // The code object's metadata must list at most `bindings` + `constants`
  // explicit arguments, pointers (8 bytes) then 32-bit constants: LaunchKernel
  // reads one params entry per listed argument, so a longer list would read
  // past the GPU layer's array.
  Status CheckFunctionParams(gpu::GpuFunction function, uint32_t bindings,
                             uint32_t constants) override;
  bool SupportsAsyncAlloc() const override { return false; }
  // True with the device library (its patch kernel). LaunchKernelIndirect
  // writes two packets: the patch dispatch, then the target dispatch with
  // its body written and its header INVALID, then rings the doorbell; the
  // patch publishes the target when it runs. A count of 0 in any dimension
  // makes the target a BARRIER_AND with no dependencies (nothing runs; HSA
  // requires grid sizes > 0). A count above kMaxWorkgroupCount (the HAL's
  // limit), or whose grid (count * workgroup size) exceeds the packet's
  // uint32 grid size, does the same and is the stream's error from then on:
  // the next synchronisation of the stream or of one of its events returns
  // OUT_OF_RANGE naming the count (sticky, as a queue error is; later
  // packets still run). `grid` must be memory the stream's agent reaches
  // (INVALID_ARGUMENT otherwise).
  bool SupportsIndirectLaunch() const override {
    return device_library_ != nullptr;
  }
  Status LaunchKernelIndirect(gpu::GpuFunction function, gpu::GpuDevicePtr grid,
                              const uint32_t block[3], uint32_t shared_memory,
                              gpu::GpuStream stream, void** params) override;
  ExecutableFormat module_format() const override {
    return ExecutableFormat::kAmdgpuCodeObject;
  }

  // Packets per AQL queue, and kernel-argument bytes per packet.
  static constexpr uint32_t kQueueSize = 4096;
  static constexpr uint32_t kKernargSlotBytes = 256;
  // Bytes of a queue's staging ring (copies from pageable host memory:
  // update payloads); larger copies are staged in their own allocation.
  static constexpr uint64_t kStagingRingBytes = 256 * 1024;
  // Device-local blocks are at least this large (a multiple of the pool's
  // allocation granule); device buffers are aligned to kBufferAlignment.
  static constexpr size_t kMinBlockBytes = size_t{1} << 20;
  static constexpr size_t kBufferAlignment = 256;

  // The agents (bit i: agent i) of the HAL queues in `queue_affinity`:
  // HAL queue q runs on agent q % agent_count (streams go by pairs).
  uint64_t AgentMask(uint64_t queue_affinity) const;
  // The device-local block pool for the agents of `agent_mask` (tests and
  // statistics); null before its first allocation.
  const AmdgpuBlockPool* device_blocks(uint64_t agent_mask);
  Status MemAllocDeviceFor(size_t size, uint64_t queue_affinity,
                           gpu::GpuDevicePtr* out) override;

  // A kernel of a loaded executable (HSA_EXECUTABLE_SYMBOL_INFO_*).
  struct Kernel {
    uint64_t object = 0;
    uint32_t kernarg_size = 0;
    uint32_t group_segment_size = 0;
    uint32_t private_segment_size = 0;
  };

 private:
  struct Agent {
    hsa_agent_t agent = {};
    hsa_amd_memory_pool_t device_pool = {};
    size_t granule = 0;  // device_pool's RUNTIME_ALLOC_GRANULE
    Kernel blit_fill, blit_copy, dispatch_patch;
  };

  HsaApi(std::shared_ptr<const HsaSymbols> syms, hsa_agent_t cpu)
      : syms_(std::move(syms)), cpu_(cpu) {}
  Status Initialize();
  Status ReadGranule(size_t i);
  // The block pool of `agent_mask` (created on first use): blocks of the
  // lowest agent's device pool, granted to the agents of the mask.
  StatusOr<AmdgpuBlockPool*> PoolFor(uint64_t agent_mask);
  // Grants the agents of `agent_mask` access to `p` (pool memory).
  Status AllowAgents(uint64_t agent_mask, void* p, size_t size);
  Status LoadDeviceLibrary();
  // Writes one packet: `body` fills bytes [2, 64) of the slot (and may use
  // the packet's kernel-argument slot); the header is stored last, then the
  // doorbell rung (s->mutex held).
  template <typename Body>
  Status Emit(HsaStream* s, uint16_t type, Body body);
  // Reserves `count` packets (s->mutex held): the index of the first, once
  // the slots and kernel-argument slots of the packets kQueueSize earlier
  // are free.
  StatusOr<uint64_t> Reserve(HsaStream* s, uint64_t count);
  // Writes the body of the packet at `index` (bytes [2, 64); `body` may
  // use the packet's kernel-argument slot), leaving its header as it is.
  template <typename Body>
  void WriteBody(HsaStream* s, uint64_t index, Body body);
  // Publishes the packet at `index` (release store of its header).
  void Publish(HsaStream* s, uint64_t index, uint16_t header);
  // Rings the doorbell for the packets up to `index` (s->mutex held).
  void Ring(HsaStream* s, uint64_t index);
  // The kernel dispatch packet of `k` (completion: the stream's epoch).
  static hsa_kernel_dispatch_packet_t DispatchPacket(
      HsaStream* s, const Kernel& k, const uint32_t size[3],
      const uint32_t block[3], uint32_t dynamic_shared, void* kernargs);
  // The stream's first error: a queue error (its callback), or an indirect
  // count that did not fit the grid (the patch kernel's status record).
  Status StreamError(HsaStream* s);
  // Grants every agent access to `p` (pool memory).
  Status AllowAllAgents(void* p, size_t size);
  Status Dispatch(HsaStream* s, const Kernel& k, const uint32_t grid[3],
                  const uint32_t block[3], uint32_t dynamic_shared,
                  const void* kernargs, size_t kernarg_bytes);
  // As Dispatch, with s->mutex held.
  Status DispatchLocked(HsaStream* s, const Kernel& k, const uint32_t grid[3],
                        const uint32_t block[3], uint32_t dynamic_shared,
                        const void* kernargs, size_t kernarg_bytes);
  // Copies `size` bytes of pageable host memory into s's staging ring for
  // the queue's next packet (s->mutex held); the GPU address, or 0 when the
  // copy does not fit the ring.
  StatusOr<uint64_t> StageLocked(HsaStream* s, const void* src, size_t size);
  Status WaitEpoch(HsaStream* s, uint64_t packets);
  // Frees the gates, staging and staging-ring space of completed packets
  // (s->mutex held).
  void Reclaim(HsaStream* s);

  std::shared_ptr<const HsaSymbols> syms_;
  hsa_agent_t cpu_;
  std::vector<Agent> agents_;
  std::vector<hsa_agent_t> agent_handles_;
  hsa_amd_memory_pool_t host_pool_ = {};     // fine-grained, kernarg-capable
  gpu::GpuModule device_library_ = nullptr;  // null: not built
  std::atomic<uint64_t> streams_created_{0};
  // Memory the GPU may access: pool allocations and locked host memory,
  // base -> size (host pointers for locked memory).
  void Track(const void* base, size_t size);
  void Untrack(const void* base);
  bool Accessible(uint64_t p, size_t n);
  std::mutex memory_mutex_;
  std::map<uintptr_t, size_t> accessible_;
  std::map<void*, void*> registered_;  // host pointer -> agent pointer
  std::set<void*> managed_;            // MemAllocManaged allocations
  // Device-local buffers: one block pool per set of agents that use them
  // (amdgpu_block_pool.h), keyed by agent mask.
  std::mutex pools_mutex_;
  std::map<uint64_t, std::unique_ptr<AmdgpuBlockPool>> pools_;
};

}  // namespace hal::amdgpu
