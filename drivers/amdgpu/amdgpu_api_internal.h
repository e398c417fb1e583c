// What the files of HsaApi (amdgpu_api.h) share: the stream, event, module
// and function objects behind the GPU layer's handles, and the packet
// helpers. Included only by amdgpu_api*.cc:
//   amdgpu_api.cc             creation, agents, memory pools, no graphs
//   amdgpu_api_queue.cc       packets, streams, events, host functions
//   amdgpu_api_memory.cc      allocations, copies and fills
//   amdgpu_api_module.cc      code objects, kernels and launches
#pragma once

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "drivers/amdgpu/amdgpu_api.h"
#include "drivers/amdgpu/amdgpu_code_object.h"
#include "drivers/amdgpu/amdgpu_ring.h"
#include "drivers/amdgpu/amdgpu_status.h"
#include "hal/command_buffer.h"

namespace hal::amdgpu {

// The per-queue epoch signal starts here and drops by one per completed
// packet: far from 0 and from overflow either way.
constexpr hsa_signal_value_t kEpochBase = hsa_signal_value_t{1} << 62;
// What a stream's epoch is set to once its queue reported an error: below
// every target, so no wait on it blocks (the queue stopped: the packets
// behind the error never complete, and an indirect dispatch's target is
// not even published when its patch failed); StreamError reports why.
// Far from the bottom, so that packets a simulated queue still retires
// (decrementing it) cannot wrap it.
constexpr hsa_signal_value_t kEpochDead = -(hsa_signal_value_t{1} << 61);

// Bytes of a range each workgroup of a blit kernel covers (64 work-items of
// 256 bytes: device/amdgpu_blit_kernels.c).
constexpr uint64_t kBlitBytesPerWorkgroup = 64 * 256;

struct HsaStream {
  size_t agent = 0;  // index in HsaApi's agents
  hsa_queue_t* queue = nullptr;
  hsa_signal_t epoch = {};
  uint8_t* kernargs = nullptr;  // kQueueSize slots of kKernargSlotBytes
  // The patch kernel's status record (device/amdgpu_dispatch_patch.c:
  // error flag, then the count that overflowed), in one more slot after
  // the kernel arguments (fine-grained memory the host reads).
  uint32_t* indirect_status = nullptr;
  std::mutex mutex;      // packet writing
  uint64_t written = 0;  // packets written (the next packet's index)
  std::atomic<int> error{HSA_STATUS_SUCCESS};  // the queue's first error
  const HsaSymbols* syms = nullptr;            // for the error callback
  // Host-function gates: (packets written once its barrier was, signal),
  // and the gates whose barrier completed, for reuse (the seed's pooled
  // signals: a host function creates no signal in the steady state).
  std::vector<std::pair<uint64_t, hsa_signal_t>> gates;
  std::vector<hsa_signal_t> free_gates;
  // Staged copy sources too large for the ring: (packets written once the
  // copy was, memory).
  std::vector<std::pair<uint64_t, void*>> staging;
  // The staging ring (fine-grained memory of kStagingRingBytes, allocated
  // on the first staged copy), its positions tagged by packet count.
  uint8_t* ring_memory = nullptr;
  AmdgpuRing ring{HsaApi::kStagingRingBytes};
};

struct HsaEvent {
  HsaStream* stream = nullptr;  // null: never recorded
  uint64_t packets = 0;         // reached once this many have completed
};

struct HsaFunction {
  std::string name;
  std::vector<HsaApi::Kernel> kernels;  // per agent
  std::vector<KernelArgument> args;
};

struct HsaModule {
  std::vector<hsa_executable_t> executables;  // per agent
  KernelArgumentLayouts layouts;
  std::map<std::string, std::unique_ptr<HsaFunction>> functions;
};

inline HsaStream* AsStream(gpu::GpuStream s) {
  return static_cast<HsaStream*>(s);
}
inline HsaEvent* AsEvent(gpu::GpuEventHandle e) {
  return static_cast<HsaEvent*>(e);
}

inline uint16_t PacketHeader(unsigned type) {
  return static_cast<uint16_t>(
      (type << HSA_PACKET_HEADER_TYPE) | (1u << HSA_PACKET_HEADER_BARRIER) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
      (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

// The epoch value below which `packets` packets have completed.
inline hsa_signal_value_t EpochTarget(uint64_t packets) {
  return kEpochBase - static_cast<hsa_signal_value_t>(packets) + 1;
}

inline uint8_t* PacketSlot(HsaStream* s, uint64_t index) {
  return static_cast<uint8_t*>(s->queue->base_address) +
         (index % s->queue->size) * 64;
}

template <typename Body>
void HsaApi::WriteBody(HsaStream* s, uint64_t index, Body body) {
  uint8_t* kernargs = s->kernargs + (index % kQueueSize) * kKernargSlotBytes;
  uint8_t packet[64] = {};
  body(packet, kernargs);
  std::memcpy(PacketSlot(s, index) + 2, packet + 2, 62);
}

template <typename Body>
Status HsaApi::Emit(HsaStream* s, uint16_t type, Body body) {
  HAL_ASSIGN_OR_RETURN(const uint64_t index, Reserve(s, 1));
  WriteBody(s, index, body);
  Publish(s, index, PacketHeader(type));
  Ring(s, index);
  return OkStatus();
}

// An HSA call in an HsaApi method: returns its error as a Status.
#define HSA(expr, ...) HAL_HSA_RETURN_IF_ERROR(syms_.get(), expr, __VA_ARGS__)

}  // namespace hal::amdgpu
