# Port backends of the userspace TCP/IP stack (included by
# src/net/CMakeLists.txt).  AF_PACKET needs nothing outside libc; AF_XDP
# needs libxdp + libbpf and DPDK needs libdpdk, both found through
# pkg-config and left out (with a message) when missing.  Those two are
# modules (libtickwire-port-xdp.so, libtickwire-port-dpdk.so) that
# port_module.c loads with dlopen on first use: libtickwire itself links
# neither.  tw_port_module() below builds one.  What was built is
# published as global properties TW_PORT_AF_PACKET / TW_PORT_AF_XDP /
# TW_PORT_DPDK for the tests, benchmarks and tools, and as compile
# definitions TW_HAVE_AF_XDP / TW_HAVE_DPDK for code that calls them.

tw_sources(port_af_packet.c port_module.c)
tw_link(${CMAKE_DL_LIBS})
set_property(GLOBAL PROPERTY TW_PORT_AF_PACKET ON)
# Modules are written beside libtickwire.so in the build tree and installed
# beside it; the loader also looks in this build tree (TW_MODULE_BUILD_DIR)
# and, from a program, in the library directory relative to its bin.
file(RELATIVE_PATH _tw_bin_to_lib "${CMAKE_INSTALL_FULL_BINDIR}" "${CMAKE_INSTALL_FULL_LIBDIR}")
set_source_files_properties(port_module.c TARGET_DIRECTORY tw_objs PROPERTIES COMPILE_DEFINITIONS
  "TW_MODULE_RELDIR=\"${_tw_bin_to_lib}\";TW_MODULE_BUILD_DIR=\"${CMAKE_BINARY_DIR}\"")

# A program linked with libtickwire.a exports the modules' host functions
# (pulled from the archive even when the program itself calls none).
set(_tw_host_list ${CMAKE_SOURCE_DIR}/cmake/tw_module_host.list)
target_link_options(tickwire_static INTERFACE
  "$<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:LINKER:--dynamic-list=${_tw_host_list};LINKER:--undefined=tw__port_leak;LINKER:--undefined=tw__port_check_held;LINKER:--undefined=tw__err;LINKER:--undefined=tw_clock_thread_cpu_ns>")

# tw_port_module(NAME short SOURCE file.c OPEN function LIBS libs...
#                [OPTIONS compile options...]): the module
# libtickwire-port-<short>.so from one backend file whose public open
# function is renamed tw__port_<OPEN>_module_open (what the loader calls).
# Its host functions stay undefined and come from the process.
function(tw_port_module)
  cmake_parse_arguments(A "" "NAME;SOURCE;OPEN" "LIBS;OPTIONS" ${ARGN})
  set(t tickwire_port_${A_NAME})
  add_library(${t} MODULE ${A_SOURCE})
  set_target_properties(${t} PROPERTIES OUTPUT_NAME tickwire-port-${A_NAME} PREFIX lib
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/src)
  target_compile_definitions(${t} PRIVATE tw_port_${A_OPEN}_open=tw__port_${A_OPEN}_module_open)
  target_compile_options(${t} PRIVATE ${TW_WARN})
  set_source_files_properties(${A_SOURCE} TARGET_DIRECTORY ${t}
                              PROPERTIES COMPILE_OPTIONS "${A_OPTIONS}")
  target_link_libraries(${t} PRIVATE ${A_LIBS} Threads::Threads)
  # Whoever links libtickwire may open such a port: the module is built with it.
  add_dependencies(tickwire ${t})
  add_dependencies(tickwire_static ${t})
  install(TARGETS ${t} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

if(PKG_CONFIG_FOUND)
  pkg_check_modules(TW_XDP QUIET libxdp libbpf)
  pkg_check_modules(TW_DPDK QUIET libdpdk)
endif()

if(TW_XDP_FOUND)
  tw_port_module(NAME xdp SOURCE port_af_xdp.c OPEN af_xdp LIBS ${TW_XDP_LINK_LIBRARIES})
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
  # Shared DPDK: the drivers (net_af_packet, net_af_xdp, ...) are plugins
  # the EAL loads from its driver directory.
  tw_port_module(NAME dpdk SOURCE port_dpdk.c OPEN dpdk LIBS ${TW_DPDK_LINK_LIBRARIES}
                 OPTIONS "${_tw_dpdk_opts}")
  # The same options for other files that include DPDK headers (bench ring).
  set_property(GLOBAL PROPERTY TW_DPDK_COMPILE_OPTIONS "${_tw_dpdk_opts}")
  target_compile_definitions(tw_objs PUBLIC TW_HAVE_DPDK=1)
  target_compile_definitions(tickwire PUBLIC TW_HAVE_DPDK=1)
  target_compile_definitions(tickwire_static PUBLIC TW_HAVE_DPDK=1)
  set_property(GLOBAL PROPERTY TW_PORT_DPDK ON)
  message(STATUS "tickwire net: DPDK port (libdpdk ${TW_DPDK_VERSION})")
else()
  message(STATUS "tickwire net: libdpdk not found through pkg-config: "
                 "the DPDK port is not built (apt-get install libdpdk-dev)")
endif()
