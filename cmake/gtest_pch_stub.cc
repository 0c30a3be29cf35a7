// The executable that makes the precompiled GoogleTest header every test binary reuses
// (cmake/tessera_test.cmake): compiled with the tests' own flags, it has no tests of its own.
#include <gtest/gtest.h>
