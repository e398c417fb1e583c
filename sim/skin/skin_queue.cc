// Streams, events, host functions and memory for every skin: streams are
// engine queues, events views of engine signals, memory the engine's.
#include "sim/skin/skin_stream.h"

namespace hal::sim::skin {

using engine::MemoryKind;

Stream* NewStream(StreamLibrary& lib, Scope* scope) {
  return lib.New<Stream>(scope, lib.engine().CreateQueue());
}

Code DestroyStream(StreamLibrary& lib, const void* handle) {
  Stream* stream = lib.Find<Stream>(handle);
  if (!stream) return Code::kInvalidHandle;
  lib.engine().DestroyQueue(stream->queue);
  return lib.Destroy<Stream>(handle);
}

Code SynchronizeStream(StreamLibrary& lib, Stream* stream) {
  if (!stream) return Code::kInvalidHandle;
  lib.engine().Synchronize(stream->queue);
  return FromEngine(stream->scope->domain.error());
}

Code RecordEvent(StreamLibrary& lib, Event* event, Stream* stream,
                 const engine::Domain* status, const char* call) {
  if (!event || !stream) return Code::kInvalidHandle;
  if (!event->event.Query(nullptr)) {
    // Legal in the vendor API, never meant by a driver: whoever still
    // queries or synchronizes on the event for the earlier work now sees
    // the later record (a pooled event handed out while in use).
    lib.Violation(call,
                  "event %p recorded again while its previous record is "
                  "still pending (reuse of an event in use)",
                  static_cast<const void*>(event));
  }
  return FromEngine(event->event.Record(stream->queue, status));
}

Code DestroyEvent(StreamLibrary& lib, const void* handle, const char* call) {
  Event* event = lib.Find<Event>(handle);
  if (event && !event->event.Query(nullptr)) {
    // Legal in the vendor API (the record completes anyway), never meant by
    // a driver: nothing can tell the recorded work's completion any more.
    lib.Violation(call,
                  "event %p destroyed while its record is still pending "
                  "(released before the work it marks completed)",
                  handle);
  }
  return lib.Destroy<Event>(handle);
}

Code QueryEvent(Event* event) {
  if (!event) return Code::kInvalidHandle;
  engine::Error status;
  if (!event->event.Query(&status)) return Code::kNotReady;
  return FromEngine(status);
}

Code SynchronizeEvent(Event* event) {
  if (!event) return Code::kInvalidHandle;
  return FromEngine(event->event.Synchronize());
}

Code StreamWaitEvent(StreamLibrary& lib, Stream* stream, Event* event,
                     const char* call) {
  if (!event) return Code::kInvalidValue;
  if (!stream) return Code::kInvalidHandle;  // no legacy default stream
  return FromEngine(
      event->event.EnqueueWait(stream->queue, call, lib.options().api));
}

Code LaunchHostFunction(StreamLibrary& lib, Stream* stream,
                        std::function<void()> fn) {
  if (!stream) return Code::kInvalidHandle;  // no legacy default stream
  return FromEngine(
      lib.engine().EnqueueHostFunction(stream->queue, std::move(fn)));
}

Code Allocate(StreamLibrary& lib, void** out, size_t size, MemoryKind kind,
              size_t alignment, bool zero_is_null) {
  if (!out) return Code::kInvalidValue;
  *out = nullptr;
  if (size == 0 && zero_is_null) return Code::kOk;
  return FromEngine(lib.engine().Allocate(size, kind, alignment, out));
}

Code CheckHostPointer(StreamLibrary& lib, const void* p) {
  engine::Allocation a;
  if (!lib.engine().FindAllocation(reinterpret_cast<uintptr_t>(p), &a) ||
      (a.kind != MemoryKind::kHost && a.kind != MemoryKind::kRegistered)) {
    return Code::kInvalidValue;
  }
  return Code::kOk;
}

Code FreeAsync(StreamLibrary& lib, uintptr_t p, Stream* stream) {
  engine::Allocation a;
  if (!lib.engine().AllocationAt(p, &a) || a.kind == MemoryKind::kHost ||
      a.kind == MemoryKind::kRegistered) {
    return Code::kInvalidValue;
  }
  if (!stream) return Code::kInvalidHandle;  // no legacy default stream
  return FromEngine(lib.engine().EnqueueFree(stream->queue, p));
}

Code CopyAsync(StreamLibrary& lib, Stream* stream, uintptr_t dst, uintptr_t src,
               size_t bytes) {
  if ((!dst || !src) && bytes) return Code::kInvalidValue;
  if (!stream) return Code::kInvalidHandle;
  engine::Op op;
  op.name = "memcpy";
  op.bytes = bytes;
  op.write = {dst, dst + bytes};
  op.read = {src, src + bytes};
  op.run = lib.engine().CopyWork(&stream->scope->domain, dst, src, bytes);
  return FromEngine(lib.engine().Enqueue(stream->queue, std::move(op)));
}

Code FillAsync(StreamLibrary& lib, Stream* stream, uintptr_t dst,
               uint32_t value, int size, size_t count) {
  if ((!dst && count) || dst % size) return Code::kInvalidValue;
  if (!stream) return Code::kInvalidHandle;
  engine::Op op;
  op.name = "memset";
  op.bytes = count * size;
  op.write = {dst, dst + count * size};
  op.run =
      lib.engine().FillWork(&stream->scope->domain, dst, value, size, count);
  return FromEngine(lib.engine().Enqueue(stream->queue, std::move(op)));
}

}  // namespace hal::sim::skin
