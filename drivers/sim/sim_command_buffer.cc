#include "drivers/sim/sim_command_buffer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <variant>

#include "drivers/sim/sim_allocator.h"
#include "drivers/sim/sim_executable.h"
#include "drivers/sim/sim_range.h"

namespace hal::sim {

namespace {

void AddAccess(const ResolvedRef& r, DeviceSize length, bool write,
               std::vector<SimAccess>* out) {
  out->push_back(SimAccess{r.buffer, SimBufferId(r.buffer), r.offset, length,
                           write, false});
}

bool IsBarrier(const Command& c) {
  return std::holds_alternative<cmd::Barrier>(c) ||
         std::holds_alternative<cmd::WaitEvents>(c);
}

void FillPattern(uint8_t* p, DeviceSize length, uint32_t pattern,
                 size_t pattern_length) {
  if (length == 0) return;  // `p` may be null for an empty range
  if (pattern_length == 1) {
    std::memset(p, static_cast<int>(pattern & 0xFF), length);
    return;
  }
  for (DeviceSize i = 0; i < length; i += pattern_length) {
    std::memcpy(p + i, &pattern, pattern_length);
  }
}

Status ExecuteCommand(const CommandBuffer& /*cb*/, const Command& c,
                      BindingTable table) {
  if (auto* f = std::get_if<cmd::Fill>(&c)) {
    HAL_ASSIGN_OR_RETURN(
        SimRange r, ResolveSimRange(f->target, table, kWholeBuffer, "fill"));
    FillPattern(r.data, r.length, f->pattern, f->pattern_length);
  } else if (auto* u = std::get_if<cmd::Update>(&c)) {
    HAL_ASSIGN_OR_RETURN(
        SimRange r, ResolveSimRange(u->target, table, kWholeBuffer, "update"));
    if (r.length) std::memcpy(r.data, u->data.data(), r.length);
  } else if (auto* cp = std::get_if<cmd::Copy>(&c)) {
    HAL_ASSIGN_OR_RETURN(
        SimRange s,
        ResolveSimRange(cp->source, table, cp->length, "copy source"));
    HAL_ASSIGN_OR_RETURN(
        SimRange d,
        ResolveSimRange(cp->target, table, cp->length, "copy target"));
    if (cp->length) std::memmove(d.data, s.data, cp->length);
  } else if (auto* d = std::get_if<cmd::Dispatch>(&c)) {
    return ExecuteSimDispatch(*d, table);
  }
  // Barriers, events and debug groups have no effect of their own here: the
  // plan already ordered the segments.
  return OkStatus();
}

}  // namespace

namespace {
template <typename T>
struct CommandTraits {
  static constexpr const char* kName = "command";
};
#define HAL_SIM_COMMAND_NAME(T, name)          \
  template <>                                  \
  struct CommandTraits<T> {                    \
    static constexpr const char* kName = name; \
  };
HAL_SIM_COMMAND_NAME(cmd::Barrier, "barrier")
HAL_SIM_COMMAND_NAME(cmd::SignalEvent, "signal_event")
HAL_SIM_COMMAND_NAME(cmd::ResetEvent, "reset_event")
HAL_SIM_COMMAND_NAME(cmd::WaitEvents, "wait_events")
HAL_SIM_COMMAND_NAME(cmd::Fill, "fill")
HAL_SIM_COMMAND_NAME(cmd::Update, "update")
HAL_SIM_COMMAND_NAME(cmd::Copy, "copy")
HAL_SIM_COMMAND_NAME(cmd::BeginDebugGroup, "begin_debug_group")
HAL_SIM_COMMAND_NAME(cmd::EndDebugGroup, "end_debug_group")
HAL_SIM_COMMAND_NAME(cmd::Dispatch, "dispatch")
#undef HAL_SIM_COMMAND_NAME
}  // namespace

const char* CommandName(const Command& c) {
  return std::visit(
      [](const auto& command) {
        return CommandTraits<std::decay_t<decltype(command)>>::kName;
      },
      c);
}

void CommandAccesses(const Command& c, BindingTable table,
                     std::vector<SimAccess>* out) {
  if (auto* f = std::get_if<cmd::Fill>(&c)) {
    ResolvedRef r = CommandBuffer::ResolveRef(f->target, table);
    AddAccess(r, r.length, true, out);
  } else if (auto* u = std::get_if<cmd::Update>(&c)) {
    ResolvedRef r = CommandBuffer::ResolveRef(u->target, table);
    AddAccess(r, r.length, true, out);
  } else if (auto* cp = std::get_if<cmd::Copy>(&c)) {
    AddAccess(CommandBuffer::ResolveRef(cp->source, table), cp->length, false,
              out);
    AddAccess(CommandBuffer::ResolveRef(cp->target, table), cp->length, true,
              out);
  } else if (auto* d = std::get_if<cmd::Dispatch>(&c)) {
    // Every binding the function may write counts as written.
    const FunctionInfo& fn = d->executable->functions()[d->entry_point];
    for (uint32_t i = 0; i < d->bindings.size(); ++i) {
      ResolvedRef r = CommandBuffer::ResolveRef(d->bindings[i], table);
      AddAccess(r, r.length, !fn.binding_read_only(i), out);
    }
    if (d->indirect) {
      AddAccess(CommandBuffer::ResolveRef(*d->indirect_workgroup_count, table),
                kIndirectWorkgroupCountSize, false, out);
    }
  }
}

StatusOr<std::vector<size_t>> PlanCommandBuffer(const CommandBuffer& cb,
                                                BindingTable table,
                                                const std::string& op_label,
                                                SimContext& ctx) {
  const auto& commands = cb.commands();
  std::vector<size_t> order;
  order.reserve(commands.size());
  struct Interval {
    uint64_t buffer_id;
    DeviceSize begin, end;
    bool write;
    size_t command;
  };
  std::vector<Interval> intervals;
  std::vector<SimAccess> accesses;
  size_t segment_start = 0;
  auto close_segment = [&](size_t end) -> Status {
    if (ctx.checking() && intervals.size() > 1) {
      // Sort by (buffer, begin) and sweep: each interval is compared with
      // the earlier ones that still overlap it.
      std::sort(intervals.begin(), intervals.end(),
                [](const Interval& a, const Interval& b) {
                  return a.buffer_id != b.buffer_id ? a.buffer_id < b.buffer_id
                                                    : a.begin < b.begin;
                });
      std::vector<const Interval*> open;
      for (const Interval& iv : intervals) {
        open.erase(std::remove_if(open.begin(), open.end(),
                                  [&](const Interval* o) {
                                    return o->buffer_id != iv.buffer_id ||
                                           o->end <= iv.begin;
                                  }),
                   open.end());
        for (const Interval* o : open) {
          if (o->command == iv.command || (!o->write && !iv.write)) continue;
          const Interval* first = o->command < iv.command ? o : &iv;
          const Interval* second = o->command < iv.command ? &iv : o;
          size_t a = first->command;
          size_t b = second->command;
          DeviceSize lo = std::max(o->begin, iv.begin);
          DeviceSize hi = std::min(o->end, iv.end);
          char buf[512];
          std::snprintf(
              buf, sizeof(buf),
              "hazard in %s: %s/%s on buffer #%llu [%llu, +%llu) between "
              "command %zu (%s) and command %zu (%s) with no barrier between "
              "them",
              op_label.c_str(), first->write ? "write" : "read",
              second->write ? "write" : "read",
              (unsigned long long)iv.buffer_id, (unsigned long long)lo,
              (unsigned long long)(hi - lo), a, CommandName(commands[a]), b,
              CommandName(commands[b]));
          ctx.Report(buf);
          return FailedPreconditionError("%s", buf);
        }
        open.push_back(&iv);
      }
    }
    intervals.clear();
    // Fisher-Yates over the segment, from the seeded stream.
    for (size_t i = end; i > segment_start + 1; --i) {
      size_t j = segment_start + ctx.schedule_random().Below(i - segment_start);
      std::swap(order[i - 1], order[j]);
    }
    return OkStatus();
  };
  for (size_t i = 0; i < commands.size(); ++i) {
    if (IsBarrier(commands[i])) {
      HAL_RETURN_IF_ERROR(close_segment(order.size()));
      order.push_back(i);
      segment_start = order.size();
      continue;
    }
    order.push_back(i);
    accesses.clear();
    CommandAccesses(commands[i], table, &accesses);
    for (const SimAccess& a : accesses) {
      if (a.length == 0) continue;
      intervals.push_back(
          Interval{a.buffer_id, a.offset, a.offset + a.length, a.write, i});
    }
  }
  HAL_RETURN_IF_ERROR(close_segment(order.size()));
  return order;
}

Status ExecuteCommandBuffer(const CommandBuffer& cb, BindingTable table,
                            const std::vector<size_t>& order) {
  const auto& commands = cb.commands();
  for (size_t i : order) {
    Status s = ExecuteCommand(cb, commands[i], table);
    if (!s.ok()) {
      return s.Annotate("command " + std::to_string(i) + " (" +
                        CommandName(commands[i]) + ")");
    }
  }
  return OkStatus();
}

}  // namespace hal::sim
