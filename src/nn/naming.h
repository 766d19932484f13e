// How modules print themselves and name themselves in errors, in PyTorch's words.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "kiln/error.h"
#include "kiln/nn/module.h"

namespace kiln::nn {

// Python's repr of a float, as PyTorch's extra_repr prints it: 1.0, 0.1, 1e-05.
std::string py_float(double value);
inline std::string_view py_bool(bool value) { return value ? "True" : "False"; }
// "Linear(in_features=4, out_features=3, bias=True)": the module as errors name it ("MSELoss" for
// one without settings).
inline std::string describe(const Module& module) {
  const std::string extra = module.extra_repr();
  return extra.empty() ? module.name() : module.name() + "(" + extra + ")";
}

// `value`, checked to be positive (ValueError "<who>: <what> must be positive, got ..." otherwise);
// for constructors, which check their sizes before they allocate anything.
inline int64_t check_positive(std::string_view who, std::string_view what, int64_t value) {
  KILN_CHECK(value > 0, ValueError, "{}: {} must be positive, got {}", who, what, value);
  return value;
}

// Runs f(); an error it raises is raised again, of the same kind, with the module's description
// in front, so an op's complaint ("cross_entropy: target ...") also names the module that called
// it. The description is only formatted when there is an error.
template <typename F>
decltype(auto) with_context(const Module& module, F&& f) {
  auto prefixed = [&](const Error& e) { return describe(module) + ": " + e.what(); };
  try {
    return std::forward<F>(f)();
  } catch (const ShapeError& e) {
    throw ShapeError(prefixed(e));
  } catch (const DTypeError& e) {
    throw DTypeError(prefixed(e));
  } catch (const IndexError& e) {
    throw IndexError(prefixed(e));
  } catch (const ValueError& e) {
    throw ValueError(prefixed(e));
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(prefixed(e));
  }
}

}  // namespace kiln::nn
