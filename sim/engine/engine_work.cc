// The engine's work: copies, fills, native kernels and stream-ordered frees,
// as the effect of a queue op or a graph node. Each runs with the checks of
// a GPU: the op fault of the plan, ranges past an allocation, use after
// free, and the domain's sticky error.
#include <array>
#include <cstring>

#include "sim/core/dispatch_cap.h"
#include "sim/engine/engine.h"

namespace hal::sim::engine {

bool Engine::BeginWork(Domain* domain, uintptr_t dst, uintptr_t src, size_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (domain->failed()) return false;
  if (OpFaultLocked()) {
    domain->Fail(Error::kLaunchFailed);
    return false;
  }
  if (n &&
      (TouchesFreedLocked(dst, n) || (src && TouchesFreedLocked(src, n)))) {
    std::fprintf(stderr,
                 "%s: illegal address (use after free, seed %llu): %zu bytes "
                 "at 0x%llx (source 0x%llx) touch freed memory\n",
                 options_.log_prefix, (unsigned long long)seed_, n,
                 (unsigned long long)dst, (unsigned long long)src);
    domain->Fail(Error::kIllegalAddress);
    return false;
  }
  if (!RangeOkLocked(dst, n) || (src && !RangeOkLocked(src, n))) {
    std::fprintf(stderr,
                 "%s: illegal address: %zu bytes at 0x%llx (source 0x%llx) "
                 "run past an allocation\n",
                 options_.log_prefix, n, (unsigned long long)dst,
                 (unsigned long long)src);
    domain->Fail(Error::kIllegalAddress);
    return false;
  }
  return true;
}

Work Engine::CopyWork(Domain* domain, uintptr_t dst, uintptr_t src, size_t n) {
  return [this, domain, dst, src, n] {
    if (!BeginWork(domain, dst, src, n)) return;
    std::memmove(reinterpret_cast<void*>(dst),
                 reinterpret_cast<const void*>(src), n);
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.work_done;
  };
}

namespace {
template <typename T>
void Fill(uintptr_t dst, T value, size_t count) {
  T* p = reinterpret_cast<T*>(dst);
  for (size_t i = 0; i < count; ++i) p[i] = value;
}
}  // namespace

Work Engine::FillWork(Domain* domain, uintptr_t dst, uint32_t pattern,
                      int pattern_bytes, size_t count) {
  return [this, domain, dst, pattern, pattern_bytes, count] {
    if (!BeginWork(domain, dst, 0, count * pattern_bytes)) return;
    if (pattern_bytes == 1) {
      Fill<uint8_t>(dst, static_cast<uint8_t>(pattern), count);
    } else if (pattern_bytes == 2) {
      Fill<uint16_t>(dst, static_cast<uint16_t>(pattern), count);
    } else {
      Fill<uint32_t>(dst, pattern, count);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.work_done;
  };
}

Work Engine::KernelWork(Domain* domain, const Kernel* kernel,
                        const uint32_t grid_in[3],
                        std::vector<uintptr_t> pointers,
                        std::vector<uint32_t> constants) {
  std::array<uint32_t, 3> grid = {grid_in[0], grid_in[1], grid_in[2]};
  return [this, domain, kernel, grid, pointers = std::move(pointers),
          constants = std::move(constants)] {
    const hal_sim_kernel_info* info = kernel->info;
    const uint32_t nb = static_cast<uint32_t>(pointers.size());
    std::vector<uint8_t*> data(nb);
    std::vector<uint64_t> lengths(nb);
    std::vector<uint32_t> flags(nb, 0);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (domain->failed()) return;
      if (OpFaultLocked()) {
        domain->Fail(Error::kLaunchFailed);
        return;
      }
      if (WorkgroupTotal(grid.data()) > kMaxSimulatedWorkgroups) {
        std::fprintf(stderr,
                     "%s: launch of '%s' with grid (%u, %u, %u): %llu "
                     "workgroups, more than the simulator runs in one "
                     "launch (%llu; a garbage indirect count?)\n",
                     options_.log_prefix, kernel->name.c_str(), grid[0],
                     grid[1], grid[2],
                     (unsigned long long)WorkgroupTotal(grid.data()),
                     (unsigned long long)kMaxSimulatedWorkgroups);
        domain->Fail(Error::kLaunchFailed);
        return;
      }
      // Each pointer may reach the end of the allocation it points into.
      for (uint32_t i = 0; i < nb; ++i) {
        Allocation a;
        if (!FindAllocationLocked(pointers[i], &a)) {
          std::fprintf(
              stderr,
              "%s: '%s' parameter %u (0x%llx) is not in any allocation%s\n",
              options_.log_prefix, kernel->name.c_str(), i,
              (unsigned long long)pointers[i],
              TouchesFreedLocked(pointers[i], 1) ? " (use after free)" : "");
          domain->Fail(Error::kIllegalAddress);
          return;
        }
        data[i] = reinterpret_cast<uint8_t*>(pointers[i]);
        lengths[i] = a.base + a.size - pointers[i];
      }
    }
    hal_sim_dispatch_state state{};
    for (int i = 0; i < 3; ++i) {
      state.workgroup_count[i] = grid[i];
      state.workgroup_size[i] = info->workgroup_size[i];
    }
    state.constant_count = static_cast<uint32_t>(constants.size());
    state.constants = constants.data();
    state.binding_count = nb;
    state.binding_data = data.data();
    state.binding_lengths = lengths.data();
    state.binding_flags = flags.data();
    for (uint32_t z = 0; z < grid[2]; ++z) {
      for (uint32_t y = 0; y < grid[1]; ++y) {
        for (uint32_t x = 0; x < grid[0]; ++x) {
          // One workgroup per call (kernel ABI v2 takes a range), so a fault
          // stops the launch at the faulting workgroup.
          state.workgroup_begin =
              x + uint64_t{grid[0]} * (y + uint64_t{grid[1]} * z);
          state.workgroup_end = state.workgroup_begin + 1;
          kernel->fn(&state);
          if (state.fault != HAL_SIM_FAULT_NONE) {
            std::fprintf(
                stderr,
                "%s: illegal address: kernel '%s' block (%u, %u, %u) "
                "thread (%u, %u, %u): %llu-byte access at offset "
                "%llu of parameter %u, past its allocation\n",
                options_.log_prefix, kernel->name.c_str(), x, y, z,
                state.fault_local_id[0], state.fault_local_id[1],
                state.fault_local_id[2], (unsigned long long)state.fault_length,
                (unsigned long long)state.fault_offset, state.fault_binding);
            domain->Fail(Error::kIllegalAddress);
            return;
          }
        }
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++counters_.kernels_run;
    ++counters_.work_done;
  };
}

Error Engine::EnqueueFree(Queue* queue, uintptr_t base) {
  Op op;
  op.name = "free";
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(base);
    if (it == allocations_.end() || it->second.kind == MemoryKind::kHost ||
        it->second.kind == MemoryKind::kRegistered) {
      return Error::kInvalidValue;
    }
    // Freeing races with any use of the memory that is not ordered before.
    op.write = {base, base + it->second.size};
  }
  op.run = [this, base] { Free(base, /*host=*/false); };
  return Enqueue(queue, std::move(op));
}

}  // namespace hal::sim::engine
