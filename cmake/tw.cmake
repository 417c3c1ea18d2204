# Helpers every part uses from its own CMakeLists.txt.

# tw_sources(file...): add library sources (paths relative to the caller).
function(tw_sources)
  foreach(f ${ARGN})
    target_sources(tw_objs PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/${f})
  endforeach()
endfunction()

# tw_link(lib...): link dependencies of the library (both shared and static)
# and make their include paths visible to the object library.
function(tw_link)
  target_link_libraries(tw_objs PUBLIC ${ARGN})
  target_link_libraries(tickwire PUBLIC ${ARGN})
  target_link_libraries(tickwire_static PUBLIC ${ARGN})
endfunction()

# tw_cli(NAME name FUNC c_function SOURCES files... [HELP "one line"]):
# register a subcommand of the `tickwire` program.  FUNC has the signature
# int FUNC(int argc, char **argv) with argv[0] the subcommand's name.  NAME
# may be two words ("bench net", "net echo"); then argv[0] is the second.
function(tw_cli)
  cmake_parse_arguments(A "" "NAME;FUNC;HELP" "SOURCES;LIBS" ${ARGN})
  foreach(f ${A_SOURCES})
    set_property(GLOBAL APPEND PROPERTY TW_CLI_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/${f})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY TW_CLI_LIBS ${A_LIBS})
  set_property(GLOBAL APPEND PROPERTY TW_CLI_ENTRIES "${A_NAME}|${A_FUNC}|${A_HELP}")
endfunction()

# tw_test(NAME name SOURCES files... [LIBS libs...] [LABELS l...] [TIMEOUT s]
#         [ARGS args...]): a C test program linked against libtickwire.
# LABELS tsan: also built by the target tsan_tests and run in the TSan
# build of scripts/test (threads and rings; keep it to those).
function(tw_test)
  cmake_parse_arguments(A "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE tickwire_static ${A_LIBS})
  target_include_directories(${A_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_compile_options(${A_NAME} PRIVATE $<$<COMPILE_LANGUAGE:C>:${TW_WARN}>)
  add_test(NAME ${A_NAME} COMMAND ${A_NAME} ${A_ARGS})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 300)
  endif()
  set_tests_properties(${A_NAME} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "c;${A_LABELS}")
  if("tsan" IN_LIST A_LABELS)
    set_property(GLOBAL APPEND PROPERTY TW_TSAN_TESTS ${A_NAME})
  endif()
endfunction()

# tw_pytest(NAME name PATH tests/dir_or_file [TIMEOUT s]): Python tests run by
# /usr/bin/python3 -m pytest against the library in this build tree.
function(tw_pytest)
  cmake_parse_arguments(A "" "NAME;PATH;TIMEOUT" "LABELS" ${ARGN})
  if(NOT TW_PYTHON_TESTS)
    return()
  endif()
  add_test(NAME ${A_NAME}
    COMMAND /usr/bin/python3 -m pytest -q -p no:cacheprovider ${CMAKE_SOURCE_DIR}/${A_PATH}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 600)
  endif()
  set_tests_properties(${A_NAME} PROPERTIES TIMEOUT ${A_TIMEOUT} LABELS "python;${A_LABELS}"
    ENVIRONMENT "PYTHONPATH=${CMAKE_SOURCE_DIR}/python;TICKWIRE_LIB=$<TARGET_FILE:tickwire>;TICKWIRE_BIN=$<TARGET_FILE:tickwire_cli>;TICKWIRE_BUILD=${CMAKE_BINARY_DIR}")
endfunction()

# tw_fuzz(NAME name SOURCES files... CORPUS dir): a libFuzzer target when
# TW_FUZZ is on (clang), and always a corpus-replay test: the same
# LLVMFuzzerTestOneInput linked with fuzz/replay.c runs every corpus file.
function(tw_fuzz)
  cmake_parse_arguments(A "" "NAME;CORPUS" "SOURCES;LIBS" ${ARGN})
  add_executable(${A_NAME}_replay ${A_SOURCES} ${CMAKE_SOURCE_DIR}/fuzz/replay.c)
  target_link_libraries(${A_NAME}_replay PRIVATE tickwire_static ${A_LIBS})
  target_include_directories(${A_NAME}_replay PRIVATE ${CMAKE_SOURCE_DIR}/src)
  add_test(NAME ${A_NAME}_replay COMMAND ${A_NAME}_replay ${CMAKE_SOURCE_DIR}/${A_CORPUS})
  set_tests_properties(${A_NAME}_replay PROPERTIES TIMEOUT 600 LABELS "fuzz")
  if(TW_FUZZ)
    add_executable(${A_NAME} ${A_SOURCES})
    target_compile_options(${A_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_options(${A_NAME} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${A_NAME} PRIVATE tickwire_static ${A_LIBS})
    target_include_directories(${A_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/src)
  endif()
endfunction()

# tw_bench(NAME name SOURCES files... [LIBS libs...]): a benchmark program.
function(tw_bench)
  cmake_parse_arguments(A "" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE tickwire_static ${A_LIBS})
  target_include_directories(${A_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/bench)
  target_compile_options(${A_NAME} PRIVATE $<$<COMPILE_LANGUAGE:C>:${TW_WARN}>)
endfunction()

# tw_quickfix_exe(NAME name SOURCES files...): a C++ program against
# Debian's libquickfix-dev (TW_QUICKFIX_INC / TW_QUICKFIX_LIB found by the
# caller): C++14 for QuickFIX 1.15's dynamic exception specifications, its
# deprecation warnings off, tools/ on the include path (common/qf_venue.h).
function(tw_quickfix_exe)
  cmake_parse_arguments(A "" "NAME" "SOURCES" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  set_target_properties(${A_NAME} PROPERTIES CXX_STANDARD 14 CXX_STANDARD_REQUIRED ON
                                             CXX_EXTENSIONS OFF)
  target_compile_options(${A_NAME} PRIVATE -Wno-deprecated -Wno-deprecated-declarations)
  target_include_directories(${A_NAME} PRIVATE ${TW_QUICKFIX_INC} ${CMAKE_SOURCE_DIR}/tools)
  target_link_libraries(${A_NAME} PRIVATE ${TW_QUICKFIX_LIB} Threads::Threads)
endfunction()
