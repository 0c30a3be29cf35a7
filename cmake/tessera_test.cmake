# tsr_add_gtest(NAME SOURCES... LIBS ...): one gtest binary, registered with ctest.
# Tests get the label of their layer so `ctest -L topology` runs one layer.
# Two tiers (docs/install.md, "Tests"): a case whose instantiation or suite is named Full...
# (FullRanks/DtypeMatrix.Case/N11, Routes/FullMismatchMatrix.Case/board) belongs to the full
# tier, which `./test.sh` leaves out by name (ctest -E '(^|/)Full') and `./test.sh --full` runs.
# Sweeps keep their edges (1, 2, a non-power of two, the largest) in the default tier.
function(tsr_add_gtest name)
  cmake_parse_arguments(T "" "LABEL;TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  gtest_discover_tests(${name} PROPERTIES LABELS "${T_LABEL}" TIMEOUT ${T_TIMEOUT}
                       DISCOVERY_TIMEOUT 60)
endfunction()
