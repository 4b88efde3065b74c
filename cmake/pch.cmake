# Precompiled headers (issue 28: build time). Parsing libtorch's ATen.h costs
# about 10 s a file on this machine, gRPC's and gtest's headers several more;
# most of a cold build was the same headers parsed again per file. Each
# group below parses its headers once (one small anchor target), and every
# target of the group reuses that PCH (REUSE_FROM): same flags, one .gch.
# A target's sources still include what they use; the PCH only makes it
# cheap. DFLASH_PCH=OFF builds without (check-torch2 compiles against other
# torch headers with -fsyntax-only, where a PCH would be wrong).
option(DFLASH_PCH "Precompiled headers for the torch-, gRPC- and gtest-heavy targets" ON)

# dflash_pch_group(<name> LINKS <libs...> HEADERS <headers...>): the anchor
# target that builds group <name>'s PCH, linking what its headers need.
function(dflash_pch_group name)
  if(NOT DFLASH_PCH)
    return()
  endif()
  cmake_parse_arguments(P "" "" "LINKS;HEADERS" ${ARGN})
  add_library(${name} STATIC ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cc)
  target_link_libraries(${name} PRIVATE ${P_LINKS})
  target_precompile_headers(${name} PRIVATE ${P_HEADERS})
endfunction()

# dflash_use_pch(<target> <group>): <target> compiles with group's PCH
# (none when <group> is empty).
function(dflash_use_pch target group)
  if(DFLASH_PCH AND group AND TARGET ${group})
    target_precompile_headers(${target} REUSE_FROM ${group})
  endif()
endfunction()
