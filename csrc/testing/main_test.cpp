// main() of the C++ unit-test binary (built by scripts/cpp_tests.sh, never part of torch_tpu._C).
#define TPU_UNIT_TEST_MAIN
#include "testing/unit_test.h"
