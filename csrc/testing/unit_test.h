// A tiny header-only unit-test harness for the torch-free C++ layers (no gtest dependency).
//
//   TEST(Suite, Name) { CHECK(x > 0); CHECK_EQ(f(2), 4); REQUIRE(ptr != nullptr); }
//
// CHECK* record a failure (file:line, both values) and continue; REQUIRE* record it and end the
// current test. An exception escaping a test fails it. Exactly one translation unit defines
// TPU_UNIT_TEST_MAIN before including this header to get main(), which runs every registered
// test (or those whose "Suite.Name" contains argv[1]), prints `N passed, M failed` as its last
// line and exits non-zero when a test failed or none ran.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tpu::testing {

struct TestCase {
  std::string name;
  const char* file;
  int line;
  void (*fn)();
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

// Failed checks of the test now running.
inline int& current_failures() {
  static int n = 0;
  return n;
}

struct Registrar {
  Registrar(const char* suite, const char* name, const char* file, int line, void (*fn)()) {
    registry().push_back({std::string(suite) + "." + name, file, line, fn});
  }
};

// Thrown by REQUIRE* to end the current test; never seen by test code.
struct AbortTest {};

template <typename T, typename = void>
struct Streamable : std::false_type {};
template <typename T>
struct Streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};

template <typename T>
std::string show(const T& v);

template <typename T>
std::string show_range(const T& v) {
  std::string s = "{";
  size_t i = 0;
  for (const auto& e : v) {
    if (i == 32) {
      s += ", ... (" + std::to_string(v.size()) + " elements)";
      break;
    }
    s += (i++ ? ", " : "") + show(e);
  }
  return s + "}";
}

template <typename T>
std::string show(const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return "\"" + v + "\"";
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
    return std::to_string(static_cast<int>(v));
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<long long>(v)) + " (enum)";
  } else if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream out;
    out.precision(9);
    out << v;
    return out.str();
  } else if constexpr (Streamable<T>::value) {
    std::ostringstream out;
    out << v;
    return out.str();
  } else if constexpr (requires(const T& r) {
                         r.begin();
                         r.end();
                         r.size();
                       }) {
    return show_range(v);
  } else {
    return "<unprintable>";
  }
}

inline void fail(const char* file, int line, const std::string& message) {
  std::printf("%s:%d: check failed: %s\n", file, line, message.c_str());
  std::fflush(stdout);
  ++current_failures();
}

template <typename A, typename B>
bool check_eq(const A& a, const B& b, const char* ea, const char* eb, const char* file, int line) {
  if (a == b) return true;
  fail(file, line, std::string(ea) + " == " + eb + "\n    left:  " + show(a) + "\n    right: " + show(b));
  return false;
}

template <typename A, typename B>
bool check_ne(const A& a, const B& b, const char* ea, const char* eb, const char* file, int line) {
  if (!(a == b)) return true;
  fail(file, line, std::string(ea) + " != " + eb + "\n    both:  " + show(a));
  return false;
}

inline bool check_near(double a, double b, double tol, const char* ea, const char* eb, const char* file,
                       int line) {
  if (std::fabs(a - b) <= tol || (std::isnan(a) && std::isnan(b))) return true;
  fail(file, line,
       std::string(ea) + " ~= " + eb + " (tolerance " + show(tol) + ")\n    left:  " + show(a) +
           "\n    right: " + show(b));
  return false;
}

// Whether `text` contains `part` (module text, error messages).
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline int run_all(int argc, char** argv) {
  std::string filter = argc > 1 ? argv[1] : "";
  int passed = 0, failed = 0;
  std::vector<std::string> failed_names;
  auto t_all = std::chrono::steady_clock::now();
  for (const TestCase& t : registry()) {
    if (!filter.empty() && t.name.find(filter) == std::string::npos) continue;
    current_failures() = 0;
    auto t0 = std::chrono::steady_clock::now();
    try {
      t.fn();
    } catch (const AbortTest&) {
      // REQUIRE failed; already counted.
    } catch (const std::exception& e) {
      fail(t.file, t.line, std::string("uncaught exception: ") + e.what());
    } catch (...) {
      fail(t.file, t.line, "uncaught non-standard exception");
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (current_failures() == 0) {
      ++passed;
      std::printf("[  OK  ] %s (%.0f ms)\n", t.name.c_str(), ms);
    } else {
      ++failed;
      failed_names.push_back(t.name);
      std::printf("[FAILED] %s (%d failed checks, %.0f ms)\n", t.name.c_str(), current_failures(), ms);
    }
    std::fflush(stdout);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  if (!failed_names.empty()) {
    std::printf("failed tests:\n");
    for (const auto& n : failed_names) std::printf("  %s\n", n.c_str());
  }
  if (passed + failed == 0) std::printf("no test matches '%s'\n", filter.c_str());
  std::printf("(%.2f s)\n", secs);
  std::printf("%d passed, %d failed\n", passed, failed);
  std::fflush(stdout);
  return failed == 0 && passed > 0 ? 0 : 1;
}

}  // namespace tpu::testing

#define TPU_TEST_CONCAT_INNER(a, b) a##b
#define TPU_TEST_CONCAT(a, b) TPU_TEST_CONCAT_INNER(a, b)

#define TEST(suite, name)                                                             \
  static void tpu_test_##suite##_##name();                                            \
  static ::tpu::testing::Registrar TPU_TEST_CONCAT(tpu_test_registrar_, __COUNTER__)( \
      #suite, #name, __FILE__, __LINE__, &tpu_test_##suite##_##name);                 \
  static void tpu_test_##suite##_##name()

#define CHECK(cond) ((cond) ? true : (::tpu::testing::fail(__FILE__, __LINE__, "CHECK(" #cond ")"), false))
#define CHECK_EQ(a, b) ::tpu::testing::check_eq((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_NE(a, b) ::tpu::testing::check_ne((a), (b), #a, #b, __FILE__, __LINE__)
#define CHECK_NEAR(a, b, tol) ::tpu::testing::check_near((a), (b), (tol), #a, #b, __FILE__, __LINE__)

#define REQUIRE(cond)                                    \
  do {                                                   \
    if (!CHECK(cond)) throw ::tpu::testing::AbortTest{}; \
  } while (0)
#define REQUIRE_EQ(a, b)                                    \
  do {                                                      \
    if (!CHECK_EQ(a, b)) throw ::tpu::testing::AbortTest{}; \
  } while (0)

// CHECK_THROWS(stmt, Type): `stmt` throws a Type. CHECK_THROWS_WITH also wants `substr` in what().
#define CHECK_THROWS_WITH(stmt, Type, substr)                                                       \
  do {                                                                                              \
    bool tpu_thrown_ = false;                                                                       \
    try {                                                                                           \
      stmt;                                                                                         \
    } catch (const Type& tpu_e_) {                                                                  \
      tpu_thrown_ = true;                                                                           \
      std::string tpu_what_ = tpu_e_.what(), tpu_sub_ = (substr);                                   \
      if (tpu_what_.find(tpu_sub_) == std::string::npos)                                            \
        ::tpu::testing::fail(                                                                       \
            __FILE__, __LINE__,                                                                     \
            "message of " #Type " from `" #stmt "` lacks \"" + tpu_sub_ + "\":\n    " + tpu_what_); \
    } catch (const std::exception& tpu_e_) {                                                        \
      tpu_thrown_ = true;                                                                           \
      ::tpu::testing::fail(                                                                         \
          __FILE__, __LINE__,                                                                       \
          "`" #stmt "` threw another exception than " #Type ": " + std::string(tpu_e_.what()));     \
    }                                                                                               \
    if (!tpu_thrown_) ::tpu::testing::fail(__FILE__, __LINE__, "`" #stmt "` did not throw " #Type); \
  } while (0)
#define CHECK_THROWS(stmt, Type) CHECK_THROWS_WITH(stmt, Type, "")

#ifdef TPU_UNIT_TEST_MAIN
int main(int argc, char** argv) { return ::tpu::testing::run_all(argc, argv); }
#endif
