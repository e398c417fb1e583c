#!/usr/bin/env python3
"""Writes the hand-made seed corpus of fuzz_hal_program (fuzz/corpus/hal_program/).

An input is two header bytes (seed, flags: bit 0 = fail every semaphore and
WaitIdle at the end) and then 32-byte records, one op each; an op reads its
arguments from its record in the order hal_program_fuzzer.cc reads them (zeros
past the end). `HAL_FUZZ_VERBOSE=1 build/default/bin/fuzz_hal_program FILE`
prints what an input does.

    python3 fuzz/make_hal_program_seeds.py   # rewrites the seed_* files and
                                             # fuzz/dict/hal_program.dict
"""
import os

OPS = {name: i for i, name in enumerate([
    "create_semaphore", "signal", "fail", "wait", "wait_semaphores", "allocate",
    "queue_alloca", "queue_dealloca", "queue_fill", "queue_update", "queue_copy",
    "queue_barrier", "queue_host_call", "record", "queue_execute", "_execute",
    "map", "unmap", "map_helpers", "verified_transfer", "_verified", "fault",
    "wait_idle", "subspan"])}

ANY = [0]                    # Affinity(): kQueueAffinityAny


def queue(q):                # Affinity(): one queue
    return [3, q]


def u32(v):
    return list(v.to_bytes(4, "little"))


def u64(v):
    return list(v.to_bytes(8, "little"))


def points(*pts):            # GenPoints: (slot, "next"|"reached"|"below"|int)
    out = [len(pts)]
    for slot, value in pts:
        out.append(slot)
        if value == "next":
            out += [3, 0]
        elif value == "reached":
            out += [1]
        elif value == "below":
            out += [2]
        else:
            out += [0] + u64(value)
        out.append(0)            # not null
    return out


def gen(affinity=ANY, wait=(), signal=()):
    return affinity + points(*wait) + points(*signal)


# GenParams: type index, usage index, access (3 = set), alignment, affinity.
DEVICE, HOST, DEVICE_VISIBLE, HOST_NONCOHERENT, OPTIMAL = 0, 1, 2, 3, 4
MAP_SCOPED, MAPPING, TRANSFER, DEFAULT = 0, 1, 2, 3


def params(type_, usage, align=None):
    out = [type_, usage, 0]
    out += [2] if align is None else [0, align]      # 1 << align
    out += [0]                                       # no queue affinity
    return out


def size(n):                 # AllocSize
    if n == 0:
        return [0]
    if n == "max":
        return [1, 0]
    if n == "max-100":
        return [2, 0]
    if n == "2^48":
        return [3, 0, 0]
    if n % 4096 == 0 and n <= 65536:
        return [4, n // 4096 - 1]
    assert 1 <= n <= 1024
    return [5, (n - 1) // 4, (n - 1) % 4]


def rng(v):                  # Range: "whole", 0, or an in-range value
    if v == "whole":
        return [0]
    if v == 0:
        return [3]
    if v == "past":
        return [2, 1]
    return [4] + u32(v)


def pattern(length, value):  # Pattern: index of 1, 2, 4 then the value
    return [{1: 0, 2: 1, 4: 2, 3: 3}[length]] + u32(value)


def rec(op, *args):
    body = [OPS[op]] + [b for a in args for b in (a if isinstance(a, list) else [a])]
    assert len(body) <= 32, (op, len(body))
    return bytes(body + [0] * (32 - len(body)))


def program(seed, fail_all, *records):
    return bytes([seed, 1 if fail_all else 0]) + b"".join(records)


def alloc(slot, type_, usage, n, align=None):
    return rec("allocate", params(type_, usage, align), size(n), slot)


SEEDS = {
    # Host semaphore calls, queue barriers and host calls that wait on
    # unreached values, then the signals that release them.
    "seed_semaphores": program(1, True,
        rec("signal", 0, 1, 2),                                  # s0 += 2
        rec("queue_host_call", gen(queue(1), [(0, "next")], [(1, "next")]), 7),
        rec("queue_barrier", gen(ANY, [(1, "next")], [(2, "next"), (2, "next")])),
        rec("wait", 2, 0, 0),                                    # poll s2
        rec("wait_semaphores", points((1, "next"), (2, "next")), 1, 0),
        rec("signal", 0, 1, 3),
        rec("wait", 1, 1, 1, 3),
        rec("fail", 3, 0),
        rec("queue_barrier", gen(ANY, [(3, "reached")], [(0, "next")])),
        rec("queue_barrier", gen(ANY, [], [(1, "below")])),
        rec("create_semaphore", 2, 1, 5),
        rec("wait_idle", 1, 4)),
    # Allocations of every kind, zero and huge sizes, subspans and mappings.
    "seed_allocations": program(2, False,
        alloc(0, HOST, MAP_SCOPED, 256),
        alloc(1, DEVICE, TRANSFER, 4096),
        alloc(2, HOST, MAPPING, 0),
        alloc(3, HOST, MAPPING, "max"),
        alloc(3, DEVICE, TRANSFER, "max-100", align=12),
        alloc(3, HOST_NONCOHERENT, MAPPING, "2^48"),
        alloc(3, OPTIMAL, MAPPING, 1000),
        rec("subspan", 0, rng(16), rng(64), 4),
        rec("map", 0, 1, 3, rng(0), rng("whole"), 1, 0x42, 0),
        rec("map", 4, 0, 1, rng(8), rng(8), 1),
        rec("unmap", 0, 1, rng(0), rng("whole")),
        rec("map_helpers", 0, rng(4), rng(16), 2),
        rec("map_helpers", 1, rng(0), rng(16), 0),
        rec("unmap", 1, 3)),
    # Fill, update and copy ordered by a semaphore the host signals last,
    # then checked ones.
    "seed_transfers": program(3, True,
        alloc(0, HOST, MAP_SCOPED, 256),
        alloc(1, DEVICE, TRANSFER, 256),
        rec("queue_fill", gen(queue(0), [(0, "next")], [(1, "next")]), 0, rng(0),
            rng(64), pattern(4, 0xA5A5F00D)),
        rec("queue_update", gen(queue(1), [(1, "next")], [(2, "next")]), 1, rng(4),
            rng(32)),
        rec("queue_copy", gen(ANY, [(2, "next")], [(3, "next")]), 1, 0, rng(0),
            rng(64), rng(128)),
        rec("signal", 0, 1, 1),
        rec("wait", 3, 1, 1, 3),
        rec("verified_transfer", 0, 0, u32(0x01020304), 2, 0, u32(3), u32(9)),
        rec("verified_transfer", 1, 1, u32(0x77), 0, 1, u32(5), u32(40)),
        rec("verified_transfer", 1, 0, u32(0xBEEF), 1, 0, u32(1), u32(2))),
    # queue_alloca behind a wait, work on the buffer, queue_dealloca, and a
    # use after dealloca.
    "seed_alloca": program(4, False,
        rec("queue_alloca", gen(queue(0), [(0, "next")], [(1, "next")]),
            params(DEVICE, TRANSFER), size(512), 0),
        rec("queue_fill", gen(queue(1), [(1, "next")], [(2, "next")]), 0, rng(0),
            rng("whole"), pattern(1, 0x11)),
        rec("queue_dealloca", gen(queue(0), [(2, "next")], [(3, "next")]), 0),
        rec("map_helpers", 0, rng(0), rng(4), 0),
        rec("signal", 0, 1, 1),
        rec("wait", 3, 1, 1, 3),
        rec("queue_fill", gen(ANY, [], []), 0, rng(0), rng("whole"), pattern(1, 1)),
        rec("queue_alloca", gen(ANY, [(3, "next")], [(3, "below")]),
            params(HOST, MAP_SCOPED), size("max"), 1),
        rec("queue_dealloca", gen(ANY, [], [(0, "next")]), 6)),
    # A reusable command buffer with binding-table slots, executed twice, and
    # a one-shot one executed twice (the second is FAILED_PRECONDITION).
    "seed_command_buffers": program(5, True,
        alloc(0, HOST, MAP_SCOPED, 256),
        alloc(1, DEVICE, TRANSFER, 256),
        # reusable, capacity 2, transfer, any queue: fill slot 0, barrier,
        # copy slot 0 -> buffer 0.
        rec("record", 0, 0, 1, 0, ANY, 0, 3,
            1, pattern(4, 0xCAFE0001), 2, 0, rng(0), rng("whole"),
            0,
            4, 2, 0, rng(0), rng("whole"), 0, 0, rng(0), rng("whole"), 2, 0),
        # slot 0 = buffer 1 [0, +64), then the whole of buffer 1
        rec("queue_execute", gen(ANY, [], [(0, "next")]), 0, 1, 1, 1, 1, rng(64)),
        rec("queue_execute", gen(ANY, [(0, "next")], [(0, "next")]), 0, 1, 1, 1, 1,
            rng("whole")),
        rec("record", 1, 1, 0, 0, ANY, 0, 2, 2, 0, 0, rng(0), rng(16)),
        rec("queue_execute", gen(ANY, [], [(1, "next")]), 1, 0),
        rec("queue_execute", gen(ANY, [], [(1, "next")]), 1, 0),
        rec("queue_execute", gen(queue(2), [], []), 2, 7),
        rec("wait_idle", 0)),
    # Faults on request (sim:// or the CUDA API simulator), then work.
    "seed_faults": program(6, False,
        rec("fault", 1, 2, 1, 3, 2, 0),
        alloc(0, HOST, MAP_SCOPED, 128),
        alloc(1, DEVICE, TRANSFER, 128),
        rec("queue_fill", gen(ANY, [], [(0, "next")]), 0, rng(0), rng("whole"),
            pattern(2, 0x1234)),
        rec("queue_copy", gen(ANY, [(0, "next")], [(1, "next")]), 0, 1, rng(0),
            rng(0), rng(64)),
        rec("queue_barrier", gen(ANY, [(1, "next")], [(2, "next")])),
        rec("verified_transfer", 0, 0, u32(0x55), 0, 0, u32(0), u32(7)),
        rec("wait_semaphores", points((2, "next")), 0, 1, 0),
        rec("fault", 0, 0, 0, 0, 0, 0),
        rec("verified_transfer", 1, 1, u32(0x66), 1, 1, u32(0), u32(7))),
    # Work left pending on semaphores nobody signals: destroying the device
    # must cancel it.
    "seed_pending_at_exit": program(7, False,
        alloc(0, DEVICE, TRANSFER, 64),
        rec("queue_fill", gen(ANY, [(0, 1000)], [(1, "next")]), 0, rng(0),
            rng("whole"), pattern(4, 7)),
        rec("queue_host_call", gen(queue(1), [(1, "next")], [(2, "next")]), 0),
        rec("create_semaphore", 0, 0, 0),
        rec("queue_dealloca", gen(ANY, [(2, "next")], [])),
        rec("wait_idle", 1, 2)),
}


def dictionary():
    """The seeds' records (so that mutations splice whole ops) and edge values."""
    lines = ["# fuzz_hal_program: an input is 2 header bytes and 32-byte records (one op",
             "# each; see fuzz/make_hal_program_seeds.py, which writes this file).",
             "# Entries: the seed programs' records, so that mutations splice ops,",
             "# and edge values."]
    seen = []
    for data in SEEDS.values():
        for i in range(2, len(data), 32):
            record = data[i:i + 32].rstrip(b"\0")
            if len(record) >= 2 and record not in seen:
                seen.append(record)
    for n, record in enumerate(seen, 1):
        lines.append('op_%d="%s"' % (n, "".join("\\x%02x" % c for c in record)))
    lines += ['max_u64="' + "\\xff" * 8 + '"', 'max_u32="' + "\\xff" * 4 + '"',
              'zeros="' + "\\x00" * 8 + '"']
    return "\n".join(lines) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "corpus", "hal_program")
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    with open(os.path.join(here, "dict", "hal_program.dict"), "w") as f:
        f.write(dictionary())


if __name__ == "__main__":
    main()
