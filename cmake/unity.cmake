# Unity builds (issue 28: build time). A library, or a folder's test binary
# (tests/CMakeLists.txt), compiles as a few translation units, each
# #including DFLASH_UNITY_BATCH of its .cc files in file order, so the
# headers every file includes (ATen, gRPC, protobuf, abseil, gtest) are
# parsed, instantiated and optimised once per batch instead of once per
# file. Measured cold on 2 cores: BENCHMARKS.md "CI stages".
#
# Why not CMake's UNITY_BUILD: its files #include each source by absolute
# path, so the text differs in every clone and ccache's direct mode never
# hits in CI's fresh checkouts. These include each source by its path below
# an include directory the target already has ("eval/anchors.cc"): the same
# text everywhere.
#
# Every file of a batch shares one scope: two files of a library or test
# folder must not define the same name in an anonymous namespace (the
# compiler says which).
# DFLASH_UNITY=OFF compiles file by file (clang-tidy reads per-file compile
# commands: scripts/check-style.sh maps these batches back; check-torch2
# checks the batches themselves).
option(DFLASH_UNITY "Compile each library as batches of its sources (unity build)" ON)
# Libraries in batches of 16, tests of 8 (tests/CMakeLists.txt sets it for
# its folder): fewer, larger batches parse the shared headers fewer times,
# and 16 still keeps one edit's recompile to a part of a library. The
# demo's build (server and client, cold, 2 cores): 507 s of compile-job time
# at 8 per batch and -O3, 462 s at 16 and -O2 (BENCHMARKS.md "CI stages").
set(DFLASH_UNITY_LIBRARY_BATCH 16 CACHE STRING "Library sources per unity translation unit")
set(DFLASH_UNITY_TEST_BATCH 8 CACHE STRING "Test sources per unity translation unit")
# The size dflash_unity_sources reads: a plain variable, so a build folder
# configured before these two existed (its cache holding the old
# DFLASH_UNITY_BATCH) batches as a fresh one does.
set(DFLASH_UNITY_BATCH ${DFLASH_UNITY_LIBRARY_BATCH})

# dflash_unity_sources(<out_var> <name> <base_dir> <sources...>): the batch
# files for <sources>, each source included by its path relative to
# <base_dir> (an include directory of the target); <sources> unchanged when
# DFLASH_UNITY is OFF. Files are rewritten only when their text changes.
function(dflash_unity_sources out name base)
  if(NOT DFLASH_UNITY)
    set(${out} ${ARGN} PARENT_SCOPE)
    return()
  endif()
  set(srcs ${ARGN})
  list(LENGTH srcs n)
  set(files "")
  set(start 0)
  set(index 0)
  while(start LESS n)
    list(SUBLIST srcs ${start} ${DFLASH_UNITY_BATCH} batch)
    set(text "// cmake/unity.cmake\n")
    foreach(src ${batch})
      file(RELATIVE_PATH rel ${base} ${src})
      string(APPEND text "#include \"${rel}\"\n")
    endforeach()
    set(f ${CMAKE_BINARY_DIR}/unity/${name}_${index}.cc)
    file(CONFIGURE OUTPUT ${f} CONTENT "${text}" @ONLY)
    list(APPEND files ${f})
    math(EXPR start "${start} + ${DFLASH_UNITY_BATCH}")
    math(EXPR index "${index} + 1")
  endwhile()
  set(${out} ${files} PARENT_SCOPE)
endfunction()
