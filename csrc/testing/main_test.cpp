// main() of the C++ unit-test binary (the CMake target torch_tpu_unit_tests, run by ctest; never part of
// torch_tpu._C).
#define TPU_UNIT_TEST_MAIN
#include "testing/unit_test.h"
