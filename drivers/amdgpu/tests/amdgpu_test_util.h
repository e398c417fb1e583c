// Helpers the AMDGPU driver's tests share (amdgpu_driver_test.cc,
// amdgpu_sim_packets_test.cc): tests that write AQL packets by hand need the
// agents of the simulated ROCr without the driver.
#pragma once

#include "drivers/amdgpu/amdgpu_dynamic_symbols.h"

namespace hal::amdgpu {

// The first agent of `type` that `syms` lists, or a null handle.
inline hsa_agent_t FirstAgent(const HsaSymbols* syms, hsa_device_type_t type) {
  struct Search {
    const HsaSymbols* syms;
    hsa_device_type_t type;
    hsa_agent_t agent = {};
  } search{syms, type};
  syms->hsa_iterate_agents(
      [](hsa_agent_t agent, void* data) {
        auto* search = static_cast<Search*>(data);
        hsa_device_type_t type;
        search->syms->hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type);
        if (type != search->type) return HSA_STATUS_SUCCESS;
        search->agent = agent;
        return HSA_STATUS_INFO_BREAK;
      },
      &search);
  return search.agent;
}

}  // namespace hal::amdgpu
