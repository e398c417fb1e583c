#!/bin/sh
# hal-pack --output=FIFO writes into the FIFO and leaves it a FIFO (it used
# to rename a temporary file over it, replacing special files such as
# /dev/null). Run by ctest (unit.tools.hal_pack.special_output):
#   hal_pack_special_output.sh HAL_PACK
set -u
pack=$1
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
manifest=$dir/k.manifest
echo 'export k module=0 workgroup=1,1,1 constants=0 bindings=-' > "$manifest"
printf '.version 7.0\n.target sm_80\n.entry k() { ret; }\n' > "$dir/k.ptx"
fifo=$dir/out.fifo
mkfifo "$fifo" || exit 1
# Open the FIFO read-write here: hal-pack's open never blocks, and its
# bytes fit in the pipe buffer without a reader draining them.
exec 3<>"$fifo"
"$pack" --format=cuda-ptx --manifest="$manifest" --output="$fifo" "$dir/k.ptx"
rc=$?
if [ $rc -ne 0 ]; then echo "FAIL: hal-pack exited $rc"; exit 1; fi
if [ ! -p "$fifo" ]; then echo "FAIL: $fifo is no longer a FIFO"; ls -l "$dir"; exit 1; fi
if [ -e "$fifo.tmp" ]; then echo "FAIL: $fifo.tmp left behind"; exit 1; fi
n=$(timeout 10 dd bs=4 count=1 <&3 2>/dev/null | wc -c)
if [ "$n" -ne 4 ]; then echo "FAIL: nothing was written into the FIFO"; exit 1; fi
echo "ok: $fifo is still a FIFO and got the packed file"
