#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "drivers/amdgpu/amdgpu_api.h"
#include "drivers/amdgpu/amdgpu_api_internal.h"

namespace hal::amdgpu {

bool HsaApi::SupportsModules() const { return true; }

Status HsaApi::ModuleLoad(std::span<const uint8_t> image, gpu::GpuModule* out) {
  auto m = std::make_unique<HsaModule>();
  HAL_ASSIGN_OR_RETURN(m->layouts, ReadKernelArgumentLayouts(image));
  hsa_code_object_reader_t reader;
  HSA(hsa_code_object_reader_create_from_memory(image.data(), image.size(),
                                                &reader),
      "reading a %zu-byte AMDGPU code object", image.size());
  // One executable per agent: kernel objects are per agent.
  Status st = [&]() -> Status {
    for (size_t i = 0; i < agents_.size(); ++i) {
      hsa_agent_t agent = agents_[i].agent;
      hsa_profile_t profile = HSA_PROFILE_BASE;
      HSA(hsa_agent_get_info(agent, HSA_AGENT_INFO_PROFILE, &profile),
          "GPU agent %zu", i);
      hsa_executable_t executable = {};
      HSA(hsa_executable_create_alt(profile,
                                    HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                    nullptr, &executable),
          "GPU agent %zu", i);
      m->executables.push_back(executable);
      HSA(hsa_executable_load_agent_code_object(executable, agent, reader,
                                                nullptr, nullptr),
          "loading a %zu-byte AMDGPU code object on GPU agent %zu",
          image.size(), i);
      HSA(hsa_executable_freeze(executable, nullptr), "GPU agent %zu", i);
    }
    return OkStatus();
  }();
  syms_->hsa_code_object_reader_destroy(reader);
  if (!st.ok()) {
    for (hsa_executable_t e : m->executables) syms_->hsa_executable_destroy(e);
    return st;
  }
  *out = m.release();
  return OkStatus();
}

Status HsaApi::ModuleUnload(gpu::GpuModule module) {
  std::unique_ptr<HsaModule> m(static_cast<HsaModule*>(module));
  for (hsa_executable_t e : m->executables) {
    HSA(hsa_executable_destroy(e), "%s", "");
  }
  return OkStatus();
}

Status HsaApi::ModuleGetFunction(gpu::GpuModule module, const char* name,
                                 gpu::GpuFunction* out) {
  auto* m = static_cast<HsaModule*>(module);
  if (auto it = m->functions.find(name); it != m->functions.end()) {
    *out = it->second.get();
    return OkStatus();
  }
  auto layout = m->layouts.find(name);
  if (layout == m->layouts.end()) {
    return InvalidArgumentError(
        "amdgpu: the code object's metadata has no kernel '%s'", name);
  }
  auto f = std::make_unique<HsaFunction>();
  f->name = name;
  f->args = layout->second;
  const std::string symbol_name = std::string(name) + ".kd";
  for (size_t i = 0; i < agents_.size(); ++i) {
    Kernel k;
    hsa_executable_symbol_t symbol;
    HSA(hsa_executable_get_symbol_by_name(
            m->executables[i], symbol_name.c_str(), &agents_[i].agent, &symbol),
        "kernel '%s' on GPU agent %zu", name, i);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k.object),
        "kernel '%s'", name);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
            &k.kernarg_size),
        "kernel '%s'", name);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
            &k.group_segment_size),
        "kernel '%s'", name);
    HSA(hsa_executable_symbol_get_info(
            symbol, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
            &k.private_segment_size),
        "kernel '%s'", name);
    f->kernels.push_back(k);
  }
  for (const KernelArgument& a : f->args) {
    if (uint64_t{a.offset} + a.size > f->kernels[0].kernarg_size) {
      return InvalidArgumentError(
          "amdgpu: kernel '%s': an argument at %u (%u bytes) lies outside its "
          "%u-byte kernarg segment",
          name, a.offset, a.size, f->kernels[0].kernarg_size);
    }
  }
  *out = f.get();
  m->functions.emplace(name, std::move(f));
  return OkStatus();
}

Status HsaApi::CheckFunctionParams(gpu::GpuFunction function, uint32_t bindings,
                                   uint32_t constants) {
  auto* f = static_cast<HsaFunction*>(function);
  if (f->args.size() > uint64_t{bindings} + constants) {
    return InvalidArgumentError(
        "amdgpu: kernel '%s': the code object's metadata lists %zu explicit "
        "arguments, but the export has %u binding(s) and %u constant(s)",
        f->name.c_str(), f->args.size(), bindings, constants);
  }
  for (size_t i = 0; i < f->args.size(); ++i) {
    const uint32_t limit = i < bindings ? 8 : 4;
    if (f->args[i].size > limit) {
      return InvalidArgumentError(
          "amdgpu: kernel '%s': explicit argument %zu is %u bytes in the code "
          "object's metadata, but the export passes a %u-byte %s there",
          f->name.c_str(), i, f->args[i].size, limit,
          i < bindings ? "binding pointer" : "constant");
    }
  }
  return OkStatus();
}

namespace {

// The checks LaunchKernel and LaunchKernelIndirect share, and the kernel's
// explicit arguments packed into `args` (kKernargSlotBytes).
Status PackLaunch(const HsaFunction& f, const HsaApi::Kernel& k,
                  const uint32_t block[3], void** params, uint8_t* args) {
  if (k.kernarg_size > HsaApi::kKernargSlotBytes) {
    return UnimplementedError(
        "amdgpu: kernel '%s' takes %u bytes of arguments; at most %u are "
        "supported",
        f.name.c_str(), k.kernarg_size, HsaApi::kKernargSlotBytes);
  }
  if (uint64_t{block[0]} * block[1] * block[2] > 1024) {
    return InvalidArgumentError("amdgpu: workgroups of more than 1024 items");
  }
  // The explicit arguments, at the offsets the metadata gives; params holds
  // one pointer per argument (read now; CheckFunctionParams made sure there
  // are no more arguments than params, and none wider than its param).
  for (size_t i = 0; i < f.args.size(); ++i) {
    std::memcpy(args + f.args[i].offset, params[i], f.args[i].size);
  }
  return OkStatus();
}

// The patch kernel's arguments (device/amdgpu_dispatch_patch.c), in the
// kernel ABI's order: pointers, then 32-bit values.
struct PatchArgs {
  uint64_t packet;  // the target dispatch packet's slot
  uint64_t count;   // uint32 workgroup counts x, y, z
  uint64_t status;  // the stream's indirect_status record
  uint32_t workgroup[3];
  uint32_t max_count;        // kMaxWorkgroupCount
  uint32_t dispatch_header;  // header | setup << 16
  uint32_t noop_header;      // BARRIER_AND header (reserved bits 0)
};
constexpr size_t kPatchArgBytes = offsetof(PatchArgs, noop_header) + 4;

}  // namespace

Status HsaApi::LaunchKernel(gpu::GpuFunction function, const uint32_t grid[3],
                            const uint32_t block[3], uint32_t shared_memory,
                            gpu::GpuStream stream, void** params) {
  auto* f = static_cast<HsaFunction*>(function);
  HsaStream* s = AsStream(stream);
  const Kernel& k = f->kernels[s->agent];
  uint8_t args[kKernargSlotBytes] = {};
  HAL_RETURN_IF_ERROR(PackLaunch(*f, k, block, params, args));
  return Dispatch(s, k, grid, block, shared_memory, args, k.kernarg_size);
}

Status HsaApi::LaunchKernelIndirect(gpu::GpuFunction function,
                                    gpu::GpuDevicePtr grid,
                                    const uint32_t block[3],
                                    uint32_t shared_memory,
                                    gpu::GpuStream stream, void** params) {
  if (!device_library_) {
    return UnimplementedError(
        "amdgpu: indirect dispatch needs the device library's patch kernel "
        "(built without it: no clang with the amdgcn target)");
  }
  auto* f = static_cast<HsaFunction*>(function);
  HsaStream* s = AsStream(stream);
  const Kernel& k = f->kernels[s->agent];
  const Kernel& patch = agents_[s->agent].dispatch_patch;
  uint8_t args[kKernargSlotBytes] = {};
  HAL_RETURN_IF_ERROR(PackLaunch(*f, k, block, params, args));
  if (block[0] == 0 || block[1] == 0 || block[2] == 0) {
    return InvalidArgumentError("amdgpu: workgroup [%u, %u, %u] has a zero",
                                block[0], block[1], block[2]);
  }
  const uint64_t count = reinterpret_cast<uint64_t>(grid);
  if (!Accessible(count, 3 * sizeof(uint32_t))) {
    return InvalidArgumentError(
        "amdgpu: the indirect workgroup count at 0x%llx is not memory the "
        "GPU reaches",
        static_cast<unsigned long long>(count));
  }
  std::lock_guard<std::mutex> lock(s->mutex);
  // Two packets: the patch dispatch, then the target dispatch, whose header
  // stays INVALID until the patch publishes it. One doorbell covers both:
  // the packet processor reaches the target only after the patch completed
  // (barrier bit), so its header is there by then.
  HAL_ASSIGN_OR_RETURN(const uint64_t index, Reserve(s, 2));
  const uint64_t target = index + 1;
  // The slot is free (Reserve waited for its previous packet); its header
  // is stored INVALID explicitly rather than trusting the packet processor
  // to have reset it, so the processor cannot take a stale header.
  Publish(s, target, HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE);
  uint16_t setup = 0;
  WriteBody(s, target, [&](uint8_t* packet, uint8_t* slot_args) {
    std::memset(slot_args, 0, k.kernarg_size);
    std::memcpy(slot_args, args, k.kernarg_size);
    const uint32_t unset[3] = {0, 0, 0};  // the patch writes the grid
    hsa_kernel_dispatch_packet_t p =
        DispatchPacket(s, k, unset, block, shared_memory, slot_args);
    setup = p.setup;
    std::memcpy(packet, &p, sizeof(p));
  });
  WriteBody(s, index, [&](uint8_t* packet, uint8_t* slot_args) {
    PatchArgs a = {};
    a.packet = reinterpret_cast<uint64_t>(PacketSlot(s, target));
    a.count = count;
    a.status = reinterpret_cast<uint64_t>(s->indirect_status);
    for (int i = 0; i < 3; ++i) a.workgroup[i] = block[i];
    // The HAL's limit, as the host-read path checks it (gpu_executable.cc).
    a.max_count = kMaxWorkgroupCount;
    a.dispatch_header =
        PacketHeader(HSA_PACKET_TYPE_KERNEL_DISPATCH) | (uint32_t{setup} << 16);
    a.noop_header = PacketHeader(HSA_PACKET_TYPE_BARRIER_AND);
    std::memset(slot_args, 0, patch.kernarg_size);
    std::memcpy(slot_args, &a, kPatchArgBytes);
    const uint32_t one[3] = {1, 1, 1};
    hsa_kernel_dispatch_packet_t p =
        DispatchPacket(s, patch, one, one, 0, slot_args);
    std::memcpy(packet, &p, sizeof(p));
  });
  Publish(s, index, PacketHeader(HSA_PACKET_TYPE_KERNEL_DISPATCH));
  Ring(s, target);
  return OkStatus();
}

}  // namespace hal::amdgpu
