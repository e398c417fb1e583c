#include "drivers/sim/sim_executable.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "drivers/sim/sim_range.h"
#include "sim/core/dispatch_cap.h"
#include "sim/core/sim_kernel_abi.h"

namespace hal::sim {

// Runs ParallelFor jobs on `workers - 1` helper threads plus the caller.
// Several queues may run dispatches at once; each job is claimed index by
// index (a dispatch's indices are ranges of workgroups), so a large job does
// not starve a small one for long.
class SimWorkerPool {
 public:
  explicit SimWorkerPool(int workers) {
    for (int i = 1; i < workers; ++i)
      threads_.emplace_back([this] { HelperMain(); });
  }
  ~SimWorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // Calls fn(ctx, i) for every i in [0, count), then returns. A plain
  // function pointer: one indirect call per index, no std::function.
  using Fn = void (*)(void* ctx, uint64_t index);
  void ParallelFor(uint64_t count, Fn fn, void* ctx) {
    if (threads_.empty() || count <= 1) {
      for (uint64_t i = 0; i < count; ++i) fn(ctx, i);
      return;
    }
    auto job = std::make_shared<Job>();
    job->fn = fn;
    job->ctx = ctx;
    job->count = count;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(job);
    }
    work_cv_.notify_all();
    RunJob(*job);
    std::unique_lock<std::mutex> lock(mutex_);
    done_cv_.wait(lock, [&] { return job->done.load() == count; });
  }

  int workers() const { return static_cast<int>(threads_.size()) + 1; }

 private:
  struct Job {
    Fn fn = nullptr;
    void* ctx = nullptr;
    uint64_t count = 0;
    std::atomic<uint64_t> next{0};
    std::atomic<uint64_t> done{0};
  };

  void RunJob(Job& job) {
    uint64_t finished = 0;
    for (uint64_t i; (i = job.next.fetch_add(1)) < job.count;) {
      job.fn(job.ctx, i);
      ++finished;
    }
    if (finished && job.done.fetch_add(finished) + finished == job.count) {
      // Taking the lock orders this notify after the waiter's predicate check.
      std::lock_guard<std::mutex> lock(mutex_);
      done_cv_.notify_all();
    }
  }

  void HelperMain() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      work_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      std::shared_ptr<Job> job = jobs_.front();
      if (job->next.load() >= job->count) {
        jobs_.pop_front();  // fully claimed; its claimers finish it
        continue;
      }
      lock.unlock();
      RunJob(*job);
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostElfMachine = 62;  // EM_X86_64
#elif defined(__aarch64__)
constexpr uint16_t kHostElfMachine = 183;  // EM_AARCH64
#else
constexpr uint16_t kHostElfMachine = 0;  // unchecked
#endif

// One loaded module. The memfd stays open while the object is loaded: glibc
// matches dlopen paths by name, and a reused /proc/self/fd/N name must never
// alias a module that is still loaded.
struct LoadedModule {
  int fd = -1;
  void* handle = nullptr;
  ~LoadedModule() {
    if (handle) dlclose(handle);
    if (fd >= 0) close(fd);
  }
};

StatusOr<std::unique_ptr<LoadedModule>> LoadModule(const ExecutableModule& m,
                                                   uint32_t ordinal) {
  uint16_t machine;
  std::memcpy(&machine, m.code.data() + 18,
              2);  // ParseExecutable checked ELF64
  if (kHostElfMachine && machine != kHostElfMachine) {
    return InvalidArgumentError(
        "sim module %u was built for ELF machine %u; this host is %u", ordinal,
        machine, kHostElfMachine);
  }
  auto module = std::make_unique<LoadedModule>();
  module->fd = memfd_create("hal-sim-module", MFD_CLOEXEC);
  if (module->fd < 0) {
    return ResourceExhaustedError("sim module %u: memfd_create failed: %s",
                                  ordinal, std::strerror(errno));
  }
  size_t written = 0;
  while (written < m.code.size()) {
    ssize_t n =
        write(module->fd, m.code.data() + written, m.code.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return ResourceExhaustedError(
          "sim module %u: writing the memfd failed: %s", ordinal,
          std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(module->fd);
  module->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module->handle) {
    const char* err = dlerror();
    return InvalidArgumentError("sim module %u: dlopen failed: %s", ordinal,
                                err ? err : "unknown error");
  }
  return module;
}

class SimExecutable final : public Executable {
 public:
  static StatusOr<Ref<Executable>> Create(ExecutableData data,
                                          std::vector<uint32_t> constants,
                                          std::shared_ptr<SimWorkerPool> pool) {
    Ref<SimExecutable> exe = Ref<SimExecutable>::Adopt(new SimExecutable(
        std::move(data.functions), std::move(constants), std::move(pool)));
    HAL_RETURN_IF_ERROR(exe->Initialize(data.modules));
    return Ref<Executable>(std::move(exe));
  }

  hal_sim_kernel_fn kernel(uint32_t index) const { return kernels_[index]; }
  SimWorkerPool* pool() const { return pool_.get(); }

 private:
  SimExecutable(std::vector<FunctionInfo> functions,
                std::vector<uint32_t> constants,
                std::shared_ptr<SimWorkerPool> pool)
      : Executable(ExecutableFormat::kSim, std::move(functions),
                   std::move(constants)),
        pool_(std::move(pool)) {}

  Status Initialize(const std::vector<ExecutableModule>& modules) {
    for (uint32_t i = 0; i < modules.size(); ++i) {
      HAL_ASSIGN_OR_RETURN(auto m, LoadModule(modules[i], i));
      modules_.push_back(std::move(m));
    }
    for (const FunctionInfo& f : functions()) {
      if (f.shared_memory_size) {
        return UnimplementedError(
            "sim executable: export '%s' needs %u bytes of workgroup shared "
            "memory; the simulator runs invocations one after another and has "
            "no shared memory or workgroup barriers",
            f.name.c_str(), f.shared_memory_size);
      }
      void* handle = modules_[f.module_ordinal]->handle;
      dlerror();
      void* fn = dlsym(handle, f.name.c_str());
      if (!fn) {
        return InvalidArgumentError(
            "sim executable: module %u does not define export '%s'",
            f.module_ordinal, f.name.c_str());
      }
      std::string info_name = f.name + "__hal_sim_info";
      const auto* info = static_cast<const hal_sim_kernel_info*>(
          dlsym(handle, info_name.c_str()));
      if (!info) {
        return InvalidArgumentError(
            "sim executable: module %u lacks '%s' (kernels must be built with "
            "the simulator kernel ABI, sim/core/sim_kernel_abi.h)",
            f.module_ordinal, info_name.c_str());
      }
      if (info->abi_version != HAL_SIM_KERNEL_ABI_VERSION) {
        return InvalidArgumentError(
            "sim executable: '%s' was built for kernel ABI %u, the simulator "
            "has %u",
            f.name.c_str(), info->abi_version, HAL_SIM_KERNEL_ABI_VERSION);
      }
      if (info->binding_count != f.binding_count ||
          info->constant_count != f.constant_count ||
          info->workgroup_size[0] != f.workgroup_size[0] ||
          info->workgroup_size[1] != f.workgroup_size[1] ||
          info->workgroup_size[2] != f.workgroup_size[2]) {
        return InvalidArgumentError(
            "sim executable: export table says '%s' has %u bindings, %u "
            "constants, workgroup [%u, %u, %u]; its code was built for %u, %u, "
            "[%u, %u, %u]",
            f.name.c_str(), f.binding_count, f.constant_count,
            f.workgroup_size[0], f.workgroup_size[1], f.workgroup_size[2],
            info->binding_count, info->constant_count, info->workgroup_size[0],
            info->workgroup_size[1], info->workgroup_size[2]);
      }
      kernels_.push_back(reinterpret_cast<hal_sim_kernel_fn>(fn));
    }
    return OkStatus();
  }

  std::shared_ptr<SimWorkerPool> pool_;
  std::vector<std::unique_ptr<LoadedModule>> modules_;
  std::vector<hal_sim_kernel_fn> kernels_;
};

class SimExecutableCache final : public ExecutableCache {
 public:
  explicit SimExecutableCache(int workers)
      : pool_(std::make_shared<SimWorkerPool>(workers)) {}

 protected:
  bool CanPrepareFormatImpl(ExecutableFormat format) const override {
    return format == ExecutableFormat::kSim;
  }
  StatusOr<Ref<Executable>> PrepareImpl(
      ExecutableData data, std::vector<uint32_t> constants) override {
    return SimExecutable::Create(std::move(data), std::move(constants), pool_);
  }

 private:
  std::shared_ptr<SimWorkerPool> pool_;
};

const char* FaultName(uint32_t fault) {
  switch (fault) {
    case HAL_SIM_FAULT_READ_OUT_OF_BOUNDS:
      return "read out of bounds";
    case HAL_SIM_FAULT_WRITE_OUT_OF_BOUNDS:
      return "write out of bounds";
    case HAL_SIM_FAULT_WRITE_READ_ONLY:
      return "write to a read-only binding";
    case HAL_SIM_FAULT_NO_SUCH_BINDING:
      return "access to a binding that does not exist";
    case HAL_SIM_FAULT_MISALIGNED:
      return "misaligned atomic access";
    default:
      return "unknown fault";
  }
}

// A dispatch split into `ranges` ranges of workgroups for the pool. Each
// range runs on its own copy of `base`; the fault of the lowest faulting
// workgroup wins, whichever range and worker found it.
struct RangeJob {
  hal_sim_kernel_fn kernel = nullptr;
  hal_sim_dispatch_state base{};
  uint64_t total = 0;
  uint64_t ranges = 0;
  std::mutex fault_mutex;
  uint64_t fault_index = ~uint64_t{0};
  hal_sim_dispatch_state fault{};

  static void Run(void* ctx, uint64_t r) {
    auto* job = static_cast<RangeJob*>(ctx);
    hal_sim_dispatch_state s = job->base;
    // Range r is [r * total / ranges, (r + 1) * total / ranges); total is
    // at most 65535^3 < 2^48 and ranges is small, so nothing overflows.
    s.workgroup_begin = r * job->total / job->ranges;
    s.workgroup_end = (r + 1) * job->total / job->ranges;
    if (s.workgroup_begin == s.workgroup_end) return;
    job->kernel(&s);
    if (s.fault == HAL_SIM_FAULT_NONE) return;
    uint64_t index =
        s.fault_workgroup_id[0] +
        uint64_t{s.workgroup_count[0]} *
            (s.fault_workgroup_id[1] +
             uint64_t{s.workgroup_count[1]} * s.fault_workgroup_id[2]);
    std::lock_guard<std::mutex> lock(job->fault_mutex);
    if (index < job->fault_index) {
      job->fault_index = index;
      job->fault = s;
    }
  }
};

}  // namespace

StatusOr<Ref<ExecutableCache>> CreateSimExecutableCache(int workers) {
  if (workers < 1) {
    return InvalidArgumentError("sim executable cache: %d workers, need >= 1",
                                workers);
  }
  return Ref<ExecutableCache>::Adopt(new SimExecutableCache(workers));
}

Status ExecuteSimDispatch(const cmd::Dispatch& d, BindingTable table) {
  const auto* exe = dynamic_cast<const SimExecutable*>(d.executable);
  if (!exe) {
    return InvalidArgumentError(
        "dispatch: the %s executable was not prepared by a sim device",
        ExecutableFormatName(d.executable->format()));
  }
  const FunctionInfo& f = exe->functions()[d.entry_point];
  const char* name = f.name.c_str();

  uint32_t count[3] = {d.workgroup_count[0], d.workgroup_count[1],
                       d.workgroup_count[2]};
  if (d.indirect) {
    const char* what = "dispatch indirect workgroup count";
    HAL_ASSIGN_OR_RETURN(SimRange r,
                         ResolveSimRange(*d.indirect_workgroup_count, table,
                                         kIndirectWorkgroupCountSize, what));
    std::memcpy(count, r.data, sizeof(count));
    for (uint32_t c : count) {
      if (c > kMaxWorkgroupCount) {
        return OutOfRangeError(
            "dispatch of '%s': indirect workgroup count [%u, %u, %u] exceeds "
            "%u "
            "in a dimension",
            name, count[0], count[1], count[2], kMaxWorkgroupCount);
      }
    }
  }

  if (WorkgroupTotal(count) > kMaxSimulatedWorkgroups) {
    return ResourceExhaustedError(
        "dispatch of '%s': workgroup count [%u, %u, %u] is %llu workgroups, "
        "more than the simulator runs in one dispatch (%llu%s)",
        name, count[0], count[1], count[2],
        (unsigned long long)WorkgroupTotal(count),
        (unsigned long long)kMaxSimulatedWorkgroups,
        d.indirect ? "; a garbage indirect count?" : "");
  }

  uint32_t n = f.binding_count;
  // On the stack: no allocation per dispatch.
  uint8_t* data[kMaxDispatchBindings];
  uint64_t lengths[kMaxDispatchBindings];
  uint32_t flags[kMaxDispatchBindings];
  if (n > kMaxDispatchBindings) {
    return InvalidArgumentError("dispatch of '%s': %u bindings, at most %u",
                                name, n, kMaxDispatchBindings);
  }
  for (uint32_t i = 0; i < n; ++i) {
    StatusOr<SimRange> r =
        ResolveSimRange(d.bindings[i], table, kWholeBuffer, "");
    if (!r.ok()) [[unlikely]] {
      // Formatted only on failure: the same call again, with the binding
      // named in the message.
      char what[96];
      std::snprintf(what, sizeof(what), "dispatch of '%s': binding %u", name,
                    i);
      StatusOr<SimRange> named =
          ResolveSimRange(d.bindings[i], table, kWholeBuffer, what);
      return named.ok() ? r.status() : named.status();
    }
    data[i] = r->data;
    lengths[i] = r->length;
    flags[i] = static_cast<uint32_t>(f.binding_flags[i]);
  }

  uint64_t total = uint64_t{count[0]} * count[1] * count[2];
  if (total == 0) return OkStatus();

  // One state per range of workgroups, not per workgroup: the kernel runs
  // the whole range (ABI v2, sim/core/sim_kernel_abi.h).
  RangeJob job;
  job.kernel = exe->kernel(d.entry_point);
  hal_sim_dispatch_state& base = job.base;
  for (int i = 0; i < 3; ++i) {
    base.workgroup_count[i] = count[i];
    base.workgroup_size[i] = f.workgroup_size[i];
  }
  base.constant_count = static_cast<uint32_t>(d.constants.size());
  base.constants = d.constants.data();
  base.specialization_constant_count =
      static_cast<uint32_t>(exe->specialization_constants().size());
  base.specialization_constants = exe->specialization_constants().data();
  base.binding_count = n;
  base.binding_data = data;
  base.binding_lengths = lengths;
  base.binding_flags = flags;

  hal_sim_dispatch_state fault{};
  SimWorkerPool* pool = exe->pool();
  if (pool->workers() == 1) {
    // The queue's own thread runs every workgroup in one call.
    fault = base;
    fault.workgroup_begin = 0;
    fault.workgroup_end = total;
    job.kernel(&fault);
  } else {
    // Enough ranges per worker to balance uneven workgroups, few enough to
    // amortize the call and the claim.
    uint64_t ranges = std::min<uint64_t>(total, uint64_t(pool->workers()) * 8);
    job.total = total;
    job.ranges = ranges;
    pool->ParallelFor(ranges, &RangeJob::Run, &job);
    fault = job.fault;
  }
  if (fault.fault == HAL_SIM_FAULT_NONE) return OkStatus();

  char where[160];
  std::snprintf(
      where, sizeof(where),
      "dispatch of '%s': workgroup (%u, %u, %u) invocation (%u, %u, %u)", name,
      fault.fault_workgroup_id[0], fault.fault_workgroup_id[1],
      fault.fault_workgroup_id[2], fault.fault_local_id[0],
      fault.fault_local_id[1], fault.fault_local_id[2]);
  uint64_t binding_length =
      fault.fault_binding < n ? lengths[fault.fault_binding] : 0;
  std::string detail = std::string(where) + ": " + FaultName(fault.fault);
  char range[160];
  std::snprintf(range, sizeof(range),
                " of %llu bytes at offset %llu of binding %u (binding range is "
                "%llu bytes)",
                (unsigned long long)fault.fault_length,
                (unsigned long long)fault.fault_offset, fault.fault_binding,
                (unsigned long long)binding_length);
  detail += range;
  if (fault.fault == HAL_SIM_FAULT_WRITE_READ_ONLY) {
    return PermissionDeniedError("%s", detail.c_str());
  }
  if (fault.fault == HAL_SIM_FAULT_MISALIGNED) {
    return InvalidArgumentError("%s", detail.c_str());
  }
  return OutOfRangeError("%s", detail.c_str());
}

}  // namespace hal::sim
