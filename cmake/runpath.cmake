# The RUNPATH of what is installed (libtessera, the tools, the torch backend) is theirs in the
# build tree too (BUILD_WITH_INSTALL_RPATH). A target whose RUNPATH changes at install gets a
# build RUNPATH that CMake ends with an empty entry (room for the rewrite), and the loader reads
# an empty entry as the working directory, searched before the system's folders: run from a
# folder holding a libucp.so.0 or libstdc++.so.6, a program or `import tessera` loaded that one.
# The wheel copies the build tree's libtessera (cmake/wheel.cmake), so it had that entry too.
#
# TSR_RUNTIME_RPATH: the folders an installed binary needs beyond the system's: the CUDA
# runtime's (when built with CUDA), the sanitizer runtime's (in a clang sanitizer build).
set(TSR_RUNTIME_RPATH "")
if(TSR_CUDA_ENABLED)
  find_package(CUDAToolkit REQUIRED)
  list(APPEND TSR_RUNTIME_RPATH "${CUDAToolkit_LIBRARY_DIR}")
endif()
if(tsr_asan_runtime_dir)
  list(APPEND TSR_RUNTIME_RPATH "${tsr_asan_runtime_dir}")
endif()

# tsr_installed_runpath(target [folder...]): target's RUNPATH, in the build tree and installed,
# is TSR_RUNTIME_RPATH after the folders given.
function(tsr_installed_runpath target)
  set(folders ${ARGN} ${TSR_RUNTIME_RPATH})
  set_target_properties(${target} PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "${folders}")
endfunction()
