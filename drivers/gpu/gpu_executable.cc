#include "drivers/gpu/gpu_executable.h"

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "drivers/gpu/gpu_allocator.h"

namespace hal::gpu {

namespace {

class GpuExecutable final : public Executable {
 public:
  static StatusOr<Ref<Executable>> Create(std::shared_ptr<GpuApi> api,
                                          ExecutableData data) {
    Ref<GpuExecutable> exe = Ref<GpuExecutable>::Adopt(
        new GpuExecutable(api, data.format, std::move(data.functions)));
    HAL_RETURN_IF_ERROR(exe->Initialize(data.modules));
    return Ref<Executable>(std::move(exe));
  }

  ~GpuExecutable() override {
    for (GpuModule m : modules_) api_->ModuleUnload(m).IgnoreError();
  }

  GpuApi* api() const { return api_.get(); }
  GpuFunction function_handle(uint32_t index) const {
    return function_handles_[index];
  }

 private:
  GpuExecutable(std::shared_ptr<GpuApi> api, ExecutableFormat format,
                std::vector<FunctionInfo> functions)
      : Executable(format, std::move(functions), {}), api_(std::move(api)) {}

  Status Initialize(const std::vector<ExecutableModule>& modules) {
    for (uint32_t i = 0; i < modules.size(); ++i) {
      GpuModule m = nullptr;
      Status s = api_->ModuleLoad(modules[i].code, &m);
      if (!s.ok()) {
        return Status(s.code(), std::string(api_->name()) + " module " +
                                    std::to_string(i) + ": " + s.message());
      }
      modules_.push_back(m);
    }
    for (const FunctionInfo& f : functions()) {
      GpuFunction fn = nullptr;
      Status s = api_->ModuleGetFunction(modules_[f.module_ordinal],
                                         f.name.c_str(), &fn);
      if (s.ok())
        s = api_->CheckFunctionParams(fn, f.binding_count, f.constant_count);
      if (!s.ok()) {
        // The export table names a kernel its module does not define, or
        // one whose parameters disagree with the export's.
        return InvalidArgumentError("%s executable: module %u, export '%s': %s",
                                    api_->name(), f.module_ordinal,
                                    f.name.c_str(), s.ToString().c_str());
      }
      function_handles_.push_back(fn);
    }
    return OkStatus();
  }

  std::shared_ptr<GpuApi> api_;
  std::vector<GpuModule> modules_;
  std::vector<GpuFunction> function_handles_;
};

class GpuExecutableCache final : public ExecutableCache {
 public:
  explicit GpuExecutableCache(std::shared_ptr<GpuApi> api)
      : api_(std::move(api)) {}

 protected:
  bool CanPrepareFormatImpl(ExecutableFormat format) const override {
    return format == api_->module_format();
  }
  StatusOr<Ref<Executable>> PrepareImpl(
      ExecutableData data, std::vector<uint32_t> constants) override {
    if (!constants.empty()) {
      // Reached only for executables that declare specialization constants
      // (the base class checked the count); PTX and HSACO have none to set.
      return UnimplementedError(
          "%s executables do not support specialization constants",
          api_->name());
    }
    return GpuExecutable::Create(api_, std::move(data));
  }

 private:
  std::shared_ptr<GpuApi> api_;
};

}  // namespace

StatusOr<Ref<ExecutableCache>> CreateGpuExecutableCache(
    std::shared_ptr<GpuApi> api) {
  if (!api->SupportsModules()) {
    return UnimplementedError(
        "%s: the library has no module and launch entry points; executables "
        "cannot be prepared",
        api->name());
  }
  return Ref<ExecutableCache>::Adopt(new GpuExecutableCache(std::move(api)));
}

namespace {

// The executable of `d` when this API prepared it.
StatusOr<const GpuExecutable*> DispatchExecutable(GpuApi* api,
                                                  const cmd::Dispatch& d) {
  const auto* exe = dynamic_cast<const GpuExecutable*>(d.executable);
  if (!exe || exe->api() != api) {
    return InvalidArgumentError(
        "dispatch: the %s executable was not prepared by this %s device",
        ExecutableFormatName(d.executable->format()), api->name());
  }
  return exe;
}

std::string DispatchName(const GpuExecutable* exe, const cmd::Dispatch& d) {
  return "dispatch of '" + exe->functions()[d.entry_point].name + "'";
}

// The launch of `d` over `count` workgroups.
StatusOr<GpuKernelLaunch> ResolveLaunch(const GpuExecutable* exe,
                                        const cmd::Dispatch& d,
                                        BindingTable table,
                                        const uint32_t count[3]) {
  const FunctionInfo& f = exe->functions()[d.entry_point];
  const std::string name = DispatchName(exe, d);
  GpuKernelLaunch launch;
  launch.function = exe->function_handle(d.entry_point);
  for (int i = 0; i < 3; ++i) {
    launch.grid[i] = count[i];
    launch.block[i] = f.workgroup_size[i];
  }
  launch.shared_memory = f.shared_memory_size;
  // Parameters: binding pointers, then constants (docs/executables.md).
  launch.pointers.resize(f.binding_count);
  for (uint32_t i = 0; i < f.binding_count; ++i) {
    const std::string what = name + ": binding " + std::to_string(i);
    HAL_ASSIGN_OR_RETURN(
        GpuRange r,
        ResolveGpuRange(d.bindings[i], table, kWholeBuffer, what.c_str()));
    launch.pointers[i] = r.address;
  }
  launch.constants.assign(d.constants.begin(), d.constants.end());
  return launch;
}

}  // namespace

std::vector<void*> GpuKernelLaunch::Params() {
  std::vector<void*> params;
  params.reserve(pointers.size() + constants.size());
  for (GpuDevicePtr& p : pointers) params.push_back(&p);
  for (uint32_t& c : constants) params.push_back(&c);
  return params;
}

namespace {
std::atomic<uint64_t> g_indirect_host_reads{0};
}  // namespace

uint64_t IndirectCountHostReads() {
  return g_indirect_host_reads.load(std::memory_order_relaxed);
}

Status LaunchGpuDispatch(GpuApi* api, GpuStream stream, const cmd::Dispatch& d,
                         BindingTable table) {
  HAL_ASSIGN_OR_RETURN(const GpuExecutable* exe, DispatchExecutable(api, d));
  uint32_t count[3] = {d.workgroup_count[0], d.workgroup_count[1],
                       d.workgroup_count[2]};
  if (d.indirect) {
    const std::string name = DispatchName(exe, d);
    const std::string what = name + ": indirect count";
    HAL_ASSIGN_OR_RETURN(
        GpuRange src,
        ResolveGpuRange(*d.indirect_workgroup_count, table,
                        kIndirectWorkgroupCountSize, what.c_str()));
    if (api->SupportsIndirectLaunch()) {
      // The device reads the count when the launch runs.
      const uint32_t one[3] = {1, 1, 1};
      HAL_ASSIGN_OR_RETURN(GpuKernelLaunch launch,
                           ResolveLaunch(exe, d, table, one));
      std::vector<void*> params = launch.Params();
      return api->LaunchKernelIndirect(launch.function, src.address,
                                       launch.block, launch.shared_memory,
                                       stream, params.data());
    }
    // Host round trip (see the header): the API has no launch with a grid
    // read from device memory.
    g_indirect_host_reads.fetch_add(1, std::memory_order_relaxed);
    HAL_RETURN_IF_ERROR(api->MemcpyAsync(reinterpret_cast<GpuDevicePtr>(count),
                                         src.address, sizeof(count), stream));
    HAL_RETURN_IF_ERROR(api->StreamSynchronize(stream));
    for (uint32_t c : count) {
      if (c > kMaxWorkgroupCount) {
        return OutOfRangeError(
            "%s: indirect workgroup count [%u, %u, %u] exceeds %u in a "
            "dimension",
            name.c_str(), count[0], count[1], count[2], kMaxWorkgroupCount);
      }
    }
  }
  HAL_ASSIGN_OR_RETURN(GpuKernelLaunch launch,
                       ResolveLaunch(exe, d, table, count));
  if (launch.empty()) return OkStatus();
  std::vector<void*> params = launch.Params();
  return api->LaunchKernel(launch.function, launch.grid, launch.block,
                           launch.shared_memory, stream, params.data());
}

StatusOr<GpuKernelLaunch> ResolveGpuDispatch(GpuApi* api,
                                             const cmd::Dispatch& d,
                                             BindingTable table) {
  HAL_ASSIGN_OR_RETURN(const GpuExecutable* exe, DispatchExecutable(api, d));
  if (d.indirect) {
    return InternalError("%s: an indirect dispatch has no grid before it runs",
                         DispatchName(exe, d).c_str());
  }
  return ResolveLaunch(exe, d, table, d.workgroup_count);
}

}  // namespace hal::gpu
