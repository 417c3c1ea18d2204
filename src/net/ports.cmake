# Port backends of the userspace TCP/IP stack (included by
# src/net/CMakeLists.txt).  AF_PACKET needs nothing outside libc; AF_XDP
# needs libxdp + libbpf and DPDK needs libdpdk, both found through
# pkg-config and left out (with a message) when missing.  What was built is
# published as global properties TW_PORT_AF_PACKET / TW_PORT_AF_XDP /
# TW_PORT_DPDK for the tests, benchmarks and tools, and as compile
# definitions TW_HAVE_AF_XDP / TW_HAVE_DPDK for code that calls them.

tw_sources(port_af_packet.c)
set_property(GLOBAL PROPERTY TW_PORT_AF_PACKET ON)

if(PKG_CONFIG_FOUND)
  pkg_check_modules(TW_XDP QUIET libxdp libbpf)
  pkg_check_modules(TW_DPDK QUIET libdpdk)
endif()

if(TW_XDP_FOUND)
  tw_sources(port_af_xdp.c)
  tw_link(${TW_XDP_LINK_LIBRARIES})
  target_compile_definitions(tw_objs PUBLIC TW_HAVE_AF_XDP=1)
  target_compile_definitions(tickwire PUBLIC TW_HAVE_AF_XDP=1)
  target_compile_definitions(tickwire_static PUBLIC TW_HAVE_AF_XDP=1)
  set_property(GLOBAL PROPERTY TW_PORT_AF_XDP ON)
  message(STATUS "tickwire net: AF_XDP port (libxdp ${TW_XDP_libxdp_VERSION})")
else()
  message(STATUS "tickwire net: libxdp/libbpf not found through pkg-config: "
                 "the AF_XDP port is not built (apt-get install libxdp-dev libbpf-dev)")
endif()

if(TW_DPDK_FOUND)
  tw_sources(port_dpdk.c)
  # DPDK's cflags (-include rte_config.h, -march=...) apply to this one file
  # only, and its headers as system headers so that our warnings stay ours.
  set(_tw_dpdk_opts "")
  foreach(f ${TW_DPDK_CFLAGS})
    if(f MATCHES "^-I(.*)")
      list(APPEND _tw_dpdk_opts "-isystem" "${CMAKE_MATCH_1}")
    else()
      list(APPEND _tw_dpdk_opts "${f}")
    endif()
  endforeach()
  # pkg-config splits "-include rte_config.h" into two words; keep them.
  set_source_files_properties(port_dpdk.c TARGET_DIRECTORY tw_objs
                              PROPERTIES COMPILE_OPTIONS "${_tw_dpdk_opts}")
  # The same options for other files that include DPDK headers (bench ring).
  set_property(GLOBAL PROPERTY TW_DPDK_COMPILE_OPTIONS "${_tw_dpdk_opts}")
  # Shared DPDK: the drivers (net_af_packet, net_af_xdp, ...) are plugins
  # the EAL loads from its driver directory.
  tw_link(${TW_DPDK_LINK_LIBRARIES})
  target_compile_definitions(tw_objs PUBLIC TW_HAVE_DPDK=1)
  target_compile_definitions(tickwire PUBLIC TW_HAVE_DPDK=1)
  target_compile_definitions(tickwire_static PUBLIC TW_HAVE_DPDK=1)
  set_property(GLOBAL PROPERTY TW_PORT_DPDK ON)
  message(STATUS "tickwire net: DPDK port (libdpdk ${TW_DPDK_VERSION})")
else()
  message(STATUS "tickwire net: libdpdk not found through pkg-config: "
                 "the DPDK port is not built (apt-get install libdpdk-dev)")
endif()
