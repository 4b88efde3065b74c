# Protocol and orchestration code at -O1 (issue 28: the demo's cold build).
# The numbers are computed in libtorch and in the layers that touch every
# byte or element (formats, weights, model, data, eval), which stay at the
# build type's -O2. What remains (the gRPC service and its generated code,
# the client, stores, jobs, the fleet, the registry, the web view, config
# and app) handles a request's fields, SQL rows and JSON, while its time
# goes to libtorch, the disk and the network; -O1 compiles it in about 75 %
# of -O2's CPU (the demo's build: 368 s of compile jobs for these at -O2,
# about 270 s at -O1; BENCHMARKS.md "CI stages"). Debug and the sanitizer twins
# keep their own levels (the twins append -O0 after this).
set(DFLASH_GLUE_OPTIMIZATION $<$<CONFIG:Release,RelWithDebInfo>:-O1>)

# dflash_glue_level(target...): compile these targets' own code at -O1.
function(dflash_glue_level)
  foreach(t ${ARGN})
    target_compile_options(${t} PRIVATE ${DFLASH_GLUE_OPTIMIZATION})
  endforeach()
endfunction()
