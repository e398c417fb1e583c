#include <cstring>
#include <memory>
#include <mutex>

#include "drivers/amdgpu/amdgpu_api.h"
#include "drivers/amdgpu/amdgpu_api_internal.h"

namespace hal::amdgpu {

namespace {

void OnQueueError(hsa_status_t status, hsa_queue_t*, void* data) {
  auto* s = static_cast<HsaStream*>(data);
  int expected = HSA_STATUS_SUCCESS;
  s->error.compare_exchange_strong(expected, static_cast<int>(status));
  // Releases every waiter of the epoch (kEpochDead): a wait on a stopped
  // queue would otherwise never end.
  if (s->syms) s->syms->hsa_signal_store_screlease(s->epoch, kEpochDead);
}

// A host function: runs once the work before it completed, then opens the
// gate that holds the work after it. Makes no HSA call but the store.
struct HostCall {
  gpu::GpuHostFn fn;
  void* user_data;
  hsa_signal_t gate;
  const HsaSymbols* syms;
  static bool Run(hsa_signal_value_t, void* arg) {
    std::unique_ptr<HostCall> call(static_cast<HostCall*>(arg));
    call->fn(call->user_data);
    call->syms->hsa_signal_store_screlease(call->gate, 0);
    return false;
  }
};

}  // namespace

StatusOr<uint64_t> HsaApi::Reserve(HsaStream* s, uint64_t count) {
  const uint64_t index =
      syms_->hsa_queue_add_write_index_screlease(s->queue, count);
  // A slot (and its kernel arguments) is free once the packet kQueueSize
  // earlier completed; packets complete in order (barrier bit).
  if (index + count > kQueueSize) {
    HAL_RETURN_IF_ERROR(WaitEpoch(s, index + count - kQueueSize));
  }
  return index;
}

void HsaApi::Publish(HsaStream* s, uint64_t index, uint16_t header) {
  // The header last: the packet processor takes a packet whose header is
  // valid, so the body must be visible first.
  __atomic_store_n(reinterpret_cast<uint16_t*>(PacketSlot(s, index)), header,
                   __ATOMIC_RELEASE);
}

void HsaApi::Ring(HsaStream* s, uint64_t index) {
  syms_->hsa_signal_store_screlease(s->queue->doorbell_signal,
                                    static_cast<hsa_signal_value_t>(index));
  s->written = index + 1;
}

Status HsaApi::WaitEpoch(HsaStream* s, uint64_t packets) {
  const hsa_signal_value_t target = EpochTarget(packets);
  // hsa_signal_wait may return before the condition holds: re-check.
  while (syms_->hsa_signal_load_scacquire(s->epoch) >= target) {
    syms_->hsa_signal_wait_scacquire(s->epoch, HSA_SIGNAL_CONDITION_LT, target,
                                     UINT64_MAX, HSA_WAIT_STATE_BLOCKED);
  }
  return OkStatus();
}

Status HsaApi::Dispatch(HsaStream* s, const Kernel& k, const uint32_t grid[3],
                        const uint32_t block[3], uint32_t dynamic_shared,
                        const void* kernargs, size_t kernarg_bytes) {
  std::lock_guard<std::mutex> lock(s->mutex);
  return DispatchLocked(s, k, grid, block, dynamic_shared, kernargs,
                        kernarg_bytes);
}

Status HsaApi::DispatchLocked(HsaStream* s, const Kernel& k,
                              const uint32_t grid[3], const uint32_t block[3],
                              uint32_t dynamic_shared, const void* kernargs,
                              size_t kernarg_bytes) {
  if (kernarg_bytes > kKernargSlotBytes || k.kernarg_size > kKernargSlotBytes) {
    return UnimplementedError(
        "amdgpu: kernels with more than %u bytes of arguments (this one: %u)",
        kKernargSlotBytes, k.kernarg_size);
  }
  uint32_t size[3];
  for (int i = 0; i < 3; ++i) {
    const uint64_t n = uint64_t{grid[i]} * block[i];
    if (grid[i] == 0 || block[i] == 0 || n > UINT32_MAX) {
      return InvalidArgumentError(
          "amdgpu: grid [%u, %u, %u] of workgroups [%u, %u, %u] exceeds the "
          "AQL grid (2^32 - 1 work-items per dimension)",
          grid[0], grid[1], grid[2], block[0], block[1], block[2]);
    }
    size[i] = static_cast<uint32_t>(n);
  }
  return Emit(s, HSA_PACKET_TYPE_KERNEL_DISPATCH,
              [&](uint8_t* packet, uint8_t* args) {
                std::memset(args, 0, k.kernarg_size);
                std::memcpy(args, kernargs, kernarg_bytes);
                hsa_kernel_dispatch_packet_t p =
                    DispatchPacket(s, k, size, block, dynamic_shared, args);
                std::memcpy(packet, &p, sizeof(p));
              });
}

hsa_kernel_dispatch_packet_t HsaApi::DispatchPacket(
    HsaStream* s, const Kernel& k, const uint32_t size[3],
    const uint32_t block[3], uint32_t dynamic_shared, void* kernargs) {
  hsa_kernel_dispatch_packet_t p = {};
  p.setup = 3 << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
  p.workgroup_size_x = static_cast<uint16_t>(block[0]);
  p.workgroup_size_y = static_cast<uint16_t>(block[1]);
  p.workgroup_size_z = static_cast<uint16_t>(block[2]);
  p.grid_size_x = size[0];
  p.grid_size_y = size[1];
  p.grid_size_z = size[2];
  p.private_segment_size = k.private_segment_size;
  p.group_segment_size = k.group_segment_size + dynamic_shared;
  p.kernel_object = k.object;
  p.kernarg_address = kernargs;
  p.completion_signal = s->epoch;
  return p;
}

void HsaApi::Reclaim(HsaStream* s) {
  // Gates and staging whose packet completed are free again.
  const hsa_signal_value_t now = syms_->hsa_signal_load_scacquire(s->epoch);
  std::erase_if(s->gates, [&](const std::pair<uint64_t, hsa_signal_t>& g) {
    if (now >= EpochTarget(g.first)) return false;
    s->free_gates.push_back(g.second);
    return true;
  });
  // The packets completed so far: the epoch counts down from kEpochBase.
  s->ring.Retire(static_cast<uint64_t>(kEpochBase - now));
  std::erase_if(s->staging, [&](const std::pair<uint64_t, void*>& g) {
    if (now >= EpochTarget(g.first)) return false;
    syms_->hsa_amd_memory_pool_free(g.second);
    Untrack(g.second);
    return true;
  });
}

Status HsaApi::StreamCreate(gpu::GpuStream* out) {
  auto s = std::make_unique<HsaStream>();
  s->syms = syms_.get();
  // By pairs: a HAL queue's work and callback streams share an agent.
  s->agent =
      static_cast<size_t>((streams_created_.fetch_add(1) / 2) % agents_.size());
  const hsa_agent_t agent = agents_[s->agent].agent;
  HSA(hsa_signal_create(kEpochBase, 0, nullptr, &s->epoch),
      "creating a queue's epoch signal");
  void* kernargs = nullptr;
  // The kernel-argument slots, then the indirect-dispatch status record.
  const size_t kernarg_bytes = size_t{kQueueSize + 1} * kKernargSlotBytes;
  Status st = [&]() -> Status {
    HSA(hsa_queue_create(agent, kQueueSize, HSA_QUEUE_TYPE_MULTI, OnQueueError,
                         s.get(), UINT32_MAX, UINT32_MAX, &s->queue),
        "creating an AQL queue of %u packets on GPU agent %zu", kQueueSize,
        s->agent);
    HSA(hsa_amd_memory_pool_allocate(host_pool_, kernarg_bytes, 0, &kernargs),
        "allocating a queue's kernel-argument ring");
    return AllowAllAgents(kernargs, kernarg_bytes);
  }();
  if (!st.ok()) {
    if (kernargs) syms_->hsa_amd_memory_pool_free(kernargs);
    if (s->queue) syms_->hsa_queue_destroy(s->queue);
    syms_->hsa_signal_destroy(s->epoch);
    return st;
  }
  s->kernargs = static_cast<uint8_t*>(kernargs);
  s->indirect_status = reinterpret_cast<uint32_t*>(
      s->kernargs + size_t{kQueueSize} * kKernargSlotBytes);
  std::memset(s->indirect_status, 0, 4 * sizeof(uint32_t));
  *out = s.release();
  return OkStatus();
}

Status HsaApi::StreamDestroy(gpu::GpuStream stream) {
  std::unique_ptr<HsaStream> s(AsStream(stream));
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    HAL_RETURN_IF_ERROR(WaitEpoch(s.get(), s->written));
  }
  // The queue first: after a queue error the wait above ends at once
  // (kEpochDead) with packets still in the queue, which use the gates, the
  // staging memory and the epoch; a destroyed queue uses nothing.
  HSA(hsa_queue_destroy(s->queue), "%s", "");
  for (auto& [packets, gate] : s->gates) syms_->hsa_signal_destroy(gate);
  for (hsa_signal_t gate : s->free_gates) syms_->hsa_signal_destroy(gate);
  for (auto& [packets, p] : s->staging) {
    syms_->hsa_amd_memory_pool_free(p);
    Untrack(p);
  }
  if (s->ring_memory) {
    Untrack(s->ring_memory);
    syms_->hsa_amd_memory_pool_free(s->ring_memory);
  }
  syms_->hsa_amd_memory_pool_free(s->kernargs);
  HSA(hsa_signal_destroy(s->epoch), "%s", "");
  return OkStatus();
}

Status HsaApi::StreamWaitEvent(gpu::GpuStream stream,
                               gpu::GpuEventHandle event) {
  HsaStream* s = AsStream(stream);
  HsaEvent* e = AsEvent(event);
  // Nothing to wait for: never recorded, recorded before any work, or on
  // this queue (in order).
  if (!e->stream || e->packets == 0 || e->stream == s) return OkStatus();
  const hsa_signal_value_t target = EpochTarget(e->packets);
  hsa_signal_t epoch = e->stream->epoch;
  std::lock_guard<std::mutex> lock(s->mutex);
  // A device-side wait: the queue's packet processor holds later packets
  // until the other queue's epoch passes the event's.
  return Emit(s, HSA_PACKET_TYPE_VENDOR_SPECIFIC,
              [&](uint8_t* packet, uint8_t*) {
                hsa_amd_barrier_value_packet_t p = {};
                p.header.AmdFormat = HSA_AMD_PACKET_TYPE_BARRIER_VALUE;
                p.signal = epoch;
                p.value = target;
                p.mask = -1;
                p.cond = HSA_SIGNAL_CONDITION_LT;
                p.completion_signal = s->epoch;
                std::memcpy(packet, &p, sizeof(p));
              });
}

Status HsaApi::StreamSynchronize(gpu::GpuStream stream) {
  HsaStream* s = AsStream(stream);
  uint64_t packets;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    packets = s->written;
  }
  HAL_RETURN_IF_ERROR(WaitEpoch(s, packets));
  return StreamError(s);
}

Status HsaApi::StreamError(HsaStream* s) {
  if (int error = s->error.load(); error != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), static_cast<hsa_status_t>(error),
                             "the AQL queue's error callback",
                             "device work failed");
  }
  // Written by the patch kernel with a release store (system scope).
  if (__atomic_load_n(&s->indirect_status[0], __ATOMIC_ACQUIRE) != 0) {
    return OutOfRangeError(
        "amdgpu: an indirect dispatch's workgroup count [%u, %u, %u] exceeds "
        "%u in a dimension, or the AQL grid (2^32 - 1 work-items per "
        "dimension) with its workgroup size; it launched nothing, and the "
        "stream stays failed",
        s->indirect_status[1], s->indirect_status[2], s->indirect_status[3],
        kMaxWorkgroupCount);
  }
  return OkStatus();
}

Status HsaApi::EventCreate(gpu::GpuEventHandle* out) {
  *out = new HsaEvent();
  return OkStatus();
}

Status HsaApi::EventDestroy(gpu::GpuEventHandle event) {
  delete AsEvent(event);
  return OkStatus();
}

Status HsaApi::EventRecord(gpu::GpuEventHandle event, gpu::GpuStream stream) {
  HsaStream* s = AsStream(stream);
  HsaEvent* e = AsEvent(event);
  std::lock_guard<std::mutex> lock(s->mutex);
  e->stream = s;
  e->packets = s->written;
  return OkStatus();
}

Status HsaApi::EventQuery(gpu::GpuEventHandle event, bool* ready) {
  HsaEvent* e = AsEvent(event);
  hsa_status_t injected = HsaInjectedError("hsa_signal_load_scacquire");
  if (injected != HSA_STATUS_SUCCESS) {
    return HsaStatusToStatus(syms_.get(), injected, "hsa_signal_load_scacquire",
                             "device work failed");
  }
  if (!e->stream) {
    *ready = true;
    return OkStatus();
  }
  const bool done = syms_->hsa_signal_load_scacquire(e->stream->epoch) <
                    EpochTarget(e->packets);
  HAL_RETURN_IF_ERROR(StreamError(e->stream));
  *ready = done;
  return OkStatus();
}

Status HsaApi::EventSynchronize(gpu::GpuEventHandle event) {
  HsaEvent* e = AsEvent(event);
  if (!e->stream) return OkStatus();
  HAL_RETURN_IF_ERROR(WaitEpoch(e->stream, e->packets));
  bool ready = false;
  return EventQuery(event, &ready);
}

Status HsaApi::LaunchHostFunc(gpu::GpuStream stream, gpu::GpuHostFn fn,
                              void* user_data) {
  HsaStream* s = AsStream(stream);
  std::lock_guard<std::mutex> lock(s->mutex);
  Reclaim(s);
  hsa_signal_t gate;
  if (!s->free_gates.empty()) {
    gate = s->free_gates.back();
    s->free_gates.pop_back();
    syms_->hsa_signal_store_screlease(gate, 1);
  } else {
    HSA(hsa_signal_create(1, 0, nullptr, &gate), "creating a host-call gate");
  }
  auto call =
      std::make_unique<HostCall>(HostCall{fn, user_data, gate, syms_.get()});
  Status st = [&]() -> Status {
    HSA(hsa_amd_signal_async_handler(s->epoch, HSA_SIGNAL_CONDITION_LT,
                                     EpochTarget(s->written), &HostCall::Run,
                                     call.get()),
        "registering a host function");
    call.release();  // HostCall::Run frees it
    return Emit(s, HSA_PACKET_TYPE_BARRIER_AND, [&](uint8_t* packet, uint8_t*) {
      hsa_barrier_and_packet_t p = {};
      p.dep_signal[0] = gate;
      p.completion_signal = s->epoch;
      std::memcpy(packet, &p, sizeof(p));
    });
  }();
  if (!st.ok()) {
    // Without a registered handler nobody touches the gate again.
    if (call) s->free_gates.push_back(gate);
    return st;
  }
  s->gates.push_back({s->written, gate});
  return OkStatus();
}

}  // namespace hal::amdgpu
