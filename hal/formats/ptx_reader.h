// The kernels of PTX text: every `.entry NAME`, with the types of the
// parameters in the list that follows it. The HAL checks that a cuda-ptx
// executable's exports are entries of their module (hal/executable.cc); the
// simulated CUDA library reads each entry's signature to check it against
// the native build of the kernel (sim/cuda/sim_libcuda_module.cc).
//
// A textual scan, not a PTX parser: it finds `.entry` directives and reads
// what follows them (comments are not skipped). Reads untrusted text: never
// reads outside `ptx`. No global state: any thread may call it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hal::formats {

struct PtxEntry {
  // [A-Za-z0-9_$]+, after `.entry` and any white space.
  std::string name;
  // The type of each `.param` of the parenthesized list after the name, as
  // written (".u64", ".b32", ...: the characters up to white space, ',' or
  // ')'); empty when no '(' follows the name.
  std::vector<std::string> param_types;
};

// Reads every `.entry` of `ptx`, in order. False, with the reason in
// `*error`, for an `.entry` without a name, a parameter list without its
// ')', or a `.param` without a type; `*out` then holds the entries before
// that one.
bool ReadPtxEntries(std::string_view ptx, std::vector<PtxEntry>* out,
                    std::string* error);

}  // namespace hal::formats
