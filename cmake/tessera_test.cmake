# tsr_add_gtest(NAME SOURCES... LIBS ...): one gtest binary, registered with ctest.
# Tests get the label of their layer so `ctest -L topology` runs one layer.
# Two tiers (docs/install.md, "Tests"): a case whose instantiation or suite is named Full...
# (FullRanks/DtypeMatrix.Case/N11, Routes/FullMismatchMatrix.Case/board) belongs to the full
# tier, which `./test.sh` leaves out by name (ctest -E '(^|/)Full') and `./test.sh --full` runs.
# Sweeps keep their edges (1, 2, a non-power of two, the largest) in the default tier.
#
# GoogleTest's header is a third of a small test file's compile time (3 of 5-11 s under the
# sanitizers here): every test binary reuses one precompiled copy of it, made by the
# tsr_gtest_pch stub (TSR_PCH, on by default; -DTSR_PCH=OFF parses it in each file).
option(TSR_PCH "Precompile the headers many files share: GoogleTest's, the torch backend's" ON)

function(tsr_add_gtest name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  if(TSR_PCH)
    if(NOT TARGET tsr_gtest_pch)
      add_executable(tsr_gtest_pch ${PROJECT_SOURCE_DIR}/cmake/gtest_pch_stub.cc)
      target_link_libraries(tsr_gtest_pch PRIVATE GTest::gtest GTest::gtest_main Threads::Threads)
      target_precompile_headers(tsr_gtest_pch PRIVATE <gtest/gtest.h>)
    endif()
    target_precompile_headers(${name} REUSE_FROM tsr_gtest_pch)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${T_LABEL}" TIMEOUT ${T_TIMEOUT}
                       DISCOVERY_TIMEOUT 60)
endfunction()
