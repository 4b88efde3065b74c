# Sanitizer twins (issue 28: cold CI). The sanitizer stage used to build the
# suite again in its own folder: the server and client code with ASan +
# UBSan, and the test code a second time, uninstrumented, differing from the
# Release build's only by NDEBUG and the folder (~600 s of compile CPU of a
# cold run on 2 cores). With DFLASH_SANITIZE_TWINS=ON (scripts/sanitize-test.sh
# turns it on in the Release build folder) every server and client library
# and both binaries get a twin, <name>_san, of the same sources built with the
# sanitizers; the test code compiles once (tests/CMakeLists.txt: object
# libraries) and each test binary of the sanitizer set is linked twice, once
# against the libraries and once against their twins. Twins are excluded
# from `all`: target sanitize_set builds them.
option(DFLASH_SANITIZE_TWINS "Sanitized twins (<name>_san) of the server and client targets" OFF)
if(DFLASH_SANITIZE_TWINS AND DFLASH_SANITIZE)
  message(FATAL_ERROR "DFLASH_SANITIZE_TWINS and DFLASH_SANITIZE: the second already "
    "instruments every target; choose one")
endif()

# -O0 with line tables (-g1): ASan and UBSan at -O2 -g cost about 2x the
# compile time per file and the reports keep file:line. Asserts stay on
# (-UNDEBUG after the Release flags' -DNDEBUG), as in a Debug build.
set(DFLASH_SAN_COMPILE_OPTIONS ${DFLASH_SANITIZER_COMPILE_FLAGS} -O0 -g1 -UNDEBUG)

# dflash_san_libs(<out> <libs...>): each library's twin where it has one,
# else the library itself (libtorch, gRPC, the generated protos: not ours).
function(dflash_san_libs out)
  set(libs "")
  foreach(lib ${ARGN})
    if(TARGET ${lib}_san)
      list(APPEND libs ${lib}_san)
    else()
      list(APPEND libs ${lib})
    endif()
  endforeach()
  set(${out} ${libs} PARENT_SCOPE)
endfunction()

# dflash_san_twin(<target> [PCH <group>]): <target>_san, the same sources,
# include directories, definitions and options as the static library or
# executable <target>, linking the twins of what it links, with the
# sanitizers; with the sanitized PCH of <group> (dflash_san_pch_group). Call
# it in <target>'s own directory (its SOURCES may be relative), after the
# twins of the libraries it links.
function(dflash_san_twin target)
  if(NOT DFLASH_SANITIZE_TWINS)
    return()
  endif()
  cmake_parse_arguments(T "" "PCH" "" ${ARGN})
  get_target_property(type ${target} TYPE)
  set(twin ${target}_san)
  get_target_property(links ${target} LINK_LIBRARIES)
  if(NOT links)
    set(links "")
  endif()
  dflash_san_libs(links ${links})
  if(type STREQUAL "INTERFACE_LIBRARY")
    add_library(${twin} INTERFACE)
    target_link_libraries(${twin} INTERFACE ${links})
    get_target_property(incs ${target} INTERFACE_INCLUDE_DIRECTORIES)
    if(incs)
      target_include_directories(${twin} INTERFACE ${incs})
    endif()
    return()
  endif()
  get_target_property(srcs ${target} SOURCES)
  if(type STREQUAL "STATIC_LIBRARY")
    add_library(${twin} STATIC EXCLUDE_FROM_ALL ${srcs})
  elseif(type STREQUAL "EXECUTABLE")
    add_executable(${twin} EXCLUDE_FROM_ALL ${srcs})
  else()
    message(FATAL_ERROR "dflash_san_twin(${target}): a ${type} has no twin")
  endif()
  # All as PUBLIC: the twins are linked by test binaries only.
  target_link_libraries(${twin} PUBLIC ${links})
  foreach(prop INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES COMPILE_DEFINITIONS
      INTERFACE_COMPILE_DEFINITIONS COMPILE_OPTIONS)
    get_target_property(value ${target} ${prop})
    if(value)
      set_property(TARGET ${twin} PROPERTY ${prop} ${value})
    endif()
  endforeach()
  target_compile_options(${twin} PRIVATE ${DFLASH_SAN_COMPILE_OPTIONS})
  target_link_options(${twin} PUBLIC ${DFLASH_SANITIZER_LINK_FLAGS})
  dflash_use_pch(${twin} "${T_PCH}")
endfunction()

# dflash_san_pch_group(<name> LINKS ... HEADERS ...): dflash_pch_group's
# anchor compiled with the twins' flags (a PCH is used only under the flags
# it was built with), excluded from `all`.
function(dflash_san_pch_group name)
  if(NOT DFLASH_SANITIZE_TWINS OR NOT DFLASH_PCH)
    return()
  endif()
  dflash_pch_group(${name} ${ARGN})
  set_target_properties(${name} PROPERTIES EXCLUDE_FROM_ALL ON)
  target_compile_options(${name} PRIVATE ${DFLASH_SAN_COMPILE_OPTIONS})
endfunction()
