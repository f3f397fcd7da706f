// A torch.compile graph whose sizes vary is recorded again on every call (a decode step). Run by
// FX's generated Python, about half of such a call's host time went to OpOverload.__call__
// turning each op's Python arguments into IValues against its schema, some 400 times a step.
// Here the graph is translated once (torch_tpu/aten_graph.py builds it node by node): each node
// keeps its operator handle and an argument template, constants already converted, so a call is
// a loop of callBoxed. The same kernels run in the same order and raise the same exceptions.
#include "python/aten_graph.h"

#include <unordered_set>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/jit/python/pybind_utils.h>
#include <torch/csrc/utils/python_arg_parser.h>

namespace tpu::python {

namespace py = pybind11;

namespace {

thread_local const std::string* t_node_location = nullptr;

// Recorded ops point at their node's line (exec::current_source_location) for as long as their
// graph may fail a check, which can outlive this graph: the strings are never freed.
const std::string* interned(const std::string& s) {
  static std::unordered_set<std::string> strings;
  return &*strings.insert(s).first;
}

// Where one argument comes from on each call.
struct Arg {
  enum class Kind { Constant, Value, List };
  // Element types of a list that holds graph values (a shape with symbolic sizes, a cat's inputs).
  enum class Elem { Int, Tensor, OptionalTensor };
  Kind kind = Kind::Constant;
  c10::IValue constant;
  int slot = -1;
  int index = -1;          // an element of the list value in `slot` (operator.getitem), or -1
  bool as_double = false;  // a size passed where the schema takes a float
  bool as_tensor = false;  // a size passed where the schema takes a tensor (a wrapped number)
  Elem elem = Elem::Int;
  std::vector<Arg> items;
};

struct Node {
  enum class Kind { Op, SymSize, Arithmetic };
  Kind kind = Kind::Op;
  std::optional<c10::OperatorHandle> op;
  std::string arithmetic;  // Kind::Arithmetic: operator's name (sizes only)
  std::vector<Arg> args;
  int first_output = 0;
  int outputs = 1;
  std::vector<int> free_after;  // slots whose last reader this node is
  const std::string* location = nullptr;
};

bool is_value(py::handle obj) { return py::hasattr(obj, "aten_graph_slot"); }

Arg value_arg(py::handle obj) {
  Arg a;
  a.kind = Arg::Kind::Value;
  a.slot = obj.attr("aten_graph_slot").cast<int>();
  a.index = obj.attr("aten_graph_index").cast<int>();
  return a;
}

Arg constant_arg(c10::IValue v) {
  Arg a;
  a.constant = std::move(v);
  return a;
}

c10::TypePtr without_optional(const c10::TypePtr& type) {
  if (auto optional = type->cast<c10::OptionalType>()) return optional->getElementType();
  return type;
}

Arg make_arg(py::handle obj, const c10::TypePtr& type, const std::string& what) {
  if (is_value(obj)) {
    Arg a = value_arg(obj);
    a.as_double = without_optional(type)->kind() == c10::TypeKind::FloatType;
    a.as_tensor = without_optional(type)->kind() == c10::TypeKind::TensorType;
    return a;
  }
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    bool holds_values = false;
    for (py::handle item : obj) holds_values = holds_values || is_value(item);
    if (holds_values) {
      auto list = without_optional(type)->cast<c10::ListType>();
      if (!list)
        throw std::invalid_argument(what + ": a list of graph values where the schema takes " + type->str());
      const c10::TypePtr elem = list->getElementType();
      Arg a;
      a.kind = Arg::Kind::List;
      if (elem->kind() == c10::TypeKind::IntType || elem->kind() == c10::TypeKind::SymIntType)
        a.elem = Arg::Elem::Int;
      else if (elem->kind() == c10::TypeKind::TensorType)
        a.elem = Arg::Elem::Tensor;
      else if (without_optional(elem)->kind() == c10::TypeKind::TensorType)
        a.elem = Arg::Elem::OptionalTensor;
      else
        throw std::invalid_argument(what + ": a list of graph values of type " + type->str());
      for (py::handle item : obj) a.items.push_back(make_arg(item, elem, what));
      return a;
    }
  }
  return constant_arg(torch::jit::toIValue(obj, type));
}

c10::IValue value_of(const Arg& a, const std::vector<c10::IValue>& values) {
  switch (a.kind) {
    case Arg::Kind::Constant:
      return a.constant;
    case Arg::Kind::Value: {
      const c10::IValue& v = values[a.slot];
      c10::IValue result = a.index < 0 ? v : v.toListRef()[a.index];
      if (a.as_double && result.isInt()) return static_cast<double>(result.toInt());
      if (a.as_tensor && (result.isInt() || result.isDouble() || result.isBool())) {
        // As torch's Python binding turns a number into a tensor argument.
        at::Tensor number = at::scalar_to_tensor(result.toScalar());
        number.unsafeGetTensorImpl()->set_wrapped_number(true);
        return number;
      }
      return result;
    }
    case Arg::Kind::List:
      break;
  }
  switch (a.elem) {
    case Arg::Elem::Int: {
      c10::List<int64_t> list;
      list.reserve(a.items.size());
      for (const Arg& item : a.items) list.push_back(value_of(item, values).toInt());
      return list;
    }
    case Arg::Elem::Tensor: {
      c10::List<at::Tensor> list;
      list.reserve(a.items.size());
      for (const Arg& item : a.items) list.push_back(value_of(item, values).toTensor());
      return list;
    }
    case Arg::Elem::OptionalTensor:
      break;
  }
  c10::List<std::optional<at::Tensor>> list;
  list.reserve(a.items.size());
  for (const Arg& item : a.items) list.push_back(value_of(item, values).toOptional<at::Tensor>());
  return list;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) throw std::domain_error("integer division or modulo by zero");
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// The Python operators Dynamo leaves on symbolic sizes, on their runtime ints.
c10::IValue arithmetic(const std::string& name, const std::vector<c10::IValue>& in) {
  const int64_t a = in[0].toInt();
  if (name == "neg") return -a;
  const int64_t b = in[1].toInt();
  if (name == "add") return a + b;
  if (name == "sub") return a - b;
  if (name == "mul") return a * b;
  if (name == "floordiv") return floor_div(a, b);
  if (name == "mod") return a - floor_div(a, b) * b;
  if (name == "lt") return a < b;
  if (name == "le") return a <= b;
  if (name == "gt") return a > b;
  if (name == "ge") return a >= b;
  if (name == "eq") return a == b;
  return a != b;  // "ne": add_arithmetic took only these names
}

c10::IValue from_python(py::handle obj) {
  if (THPVariable_Check(obj.ptr())) return THPVariable_Unpack(obj.ptr());
  if (obj.is_none()) return {};
  if (py::isinstance<py::bool_>(obj)) return obj.cast<bool>();
  if (py::isinstance<py::int_>(obj)) return obj.cast<int64_t>();
  if (py::isinstance<py::float_>(obj)) return obj.cast<double>();
  throw py::type_error("aten graph: an input of type " +
                       py::str(py::type::handle_of(obj)).cast<std::string>());
}

class AtenGraph {
 public:
  int add_input() { return slots_++; }

  // The node calling `name.overload` (its first output slot; an op with several results fills
  // as many slots). Arguments are matched to the schema as the dispatcher's Python binding does.
  int add_op(const std::string& name, const std::string& overload, const py::sequence& args,
             const py::dict& kwargs, const std::string& location) {
    Node node;
    node.op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload.c_str());
    const c10::FunctionSchema& schema = node.op->schema();
    const std::string what = name + (overload.empty() ? "" : "." + overload);
    // Numbers where the schema takes a tensor (aten.mul.Tensor(x, 2)), as torch's binding of
    // OpOverload.__call__ accepts them: a wrapped-number tensor, made once.
    const bool prims = name.rfind("prims::", 0) == 0;
    const bool aten = name.rfind("aten::", 0) == 0;
    torch::jit::ToIValueAllowNumbersAsTensors numbers_as_tensors(
        prims || (aten && torch::should_allow_numbers_as_tensors(name.substr(6))));
    if (args.size() > schema.arguments().size())
      throw std::invalid_argument(what + ": more arguments than its schema");
    size_t used_kwargs = 0;
    for (size_t i = 0; i < schema.arguments().size(); ++i) {
      const c10::Argument& a = schema.arguments()[i];
      if (i < args.size() && !a.kwarg_only()) {
        node.args.push_back(make_arg(args[i], a.type(), what));
      } else if (kwargs.contains(a.name())) {
        node.args.push_back(make_arg(kwargs[py::str(a.name())], a.type(), what));
        ++used_kwargs;
      } else if (a.default_value()) {
        node.args.push_back(constant_arg(*a.default_value()));
      } else {
        throw std::invalid_argument(what + ": argument '" + a.name() + "' is missing");
      }
    }
    if (used_kwargs != kwargs.size()) throw std::invalid_argument(what + ": a keyword its schema lacks");
    if (name == "aten::sym_size" && overload == "int") node.kind = Node::Kind::SymSize;
    node.outputs = static_cast<int>(schema.returns().size());
    return add(std::move(node), location);
  }

  int add_arithmetic(const std::string& name, const py::sequence& args) {
    Node node;
    node.kind = Node::Kind::Arithmetic;
    node.arithmetic = name;
    static const std::unordered_set<std::string> known = {"neg", "add", "sub", "mul", "floordiv", "mod",
                                                          "lt",  "le",  "gt",  "ge",  "eq",       "ne"};
    if (!known.count(name)) throw std::invalid_argument("aten graph: no arithmetic operator '" + name + "'");
    for (py::handle a : args) node.args.push_back(make_arg(a, c10::IntType::get(), name));
    return add(std::move(node), "");
  }

  void set_free_lists(const std::vector<std::vector<int>>& lists) {
    TORCH_CHECK(lists.size() == nodes_.size(), "aten graph: ", lists.size(), " free lists for ",
                nodes_.size(), " nodes");
    for (size_t i = 0; i < lists.size(); ++i) nodes_[i].free_after = lists[i];
  }

  // `many`: the graph returns a list of them (a torch.compile graph's always is), else the one.
  void set_outputs(const py::sequence& outputs, bool many) {
    many_outputs_ = many;
    outputs_.clear();
    for (py::handle o : outputs)
      outputs_.push_back(is_value(o) ? value_arg(o)
                                     : constant_arg(torch::jit::toIValue(o, c10::AnyType::get())));
  }

  py::object run(const py::args& inputs) {
    HANDLE_TH_ERRORS
    std::vector<c10::IValue> values(slots_);
    for (size_t i = 0; i < inputs.size(); ++i) values[i] = from_python(inputs[i]);
    struct RestoreLocation {
      const std::string* saved = t_node_location;
      ~RestoreLocation() { t_node_location = saved; }
    } restore;
    torch::jit::Stack stack;
    for (const Node& node : nodes_) {
      t_node_location = node.location;
      stack.clear();
      for (const Arg& a : node.args) stack.push_back(value_of(a, values));
      switch (node.kind) {
        case Node::Kind::Op:
          node.op->callBoxed(stack);
          for (int i = 0; i < node.outputs; ++i) values[node.first_output + i] = std::move(stack[i]);
          break;
        case Node::Kind::SymSize:
          values[node.first_output] = stack[0].toTensor().size(stack[1].toInt());
          break;
        case Node::Kind::Arithmetic:
          values[node.first_output] = arithmetic(node.arithmetic, stack);
          break;
      }
      for (int slot : node.free_after) values[slot] = c10::IValue();
    }
    t_node_location = restore.saved;
    if (!many_outputs_) return torch::jit::toPyObject(value_of(outputs_.at(0), values));
    py::list result;
    for (const Arg& o : outputs_) result.append(torch::jit::toPyObject(value_of(o, values)));
    return result;
    END_HANDLE_TH_ERRORS_PYBIND
  }

 private:
  int add(Node node, const std::string& location) {
    node.first_output = slots_;
    slots_ += node.outputs;
    node.location = location.empty() ? nullptr : interned(location);
    nodes_.push_back(std::move(node));
    return nodes_.back().first_output;
  }

  int slots_ = 0;
  std::vector<Node> nodes_;
  std::vector<Arg> outputs_;
  bool many_outputs_ = true;
};

}  // namespace

const std::string* running_node_location() { return t_node_location; }

void init_aten_graph_bindings(py::module& m) {
  py::class_<AtenGraph>(m, "_AtenGraph")
      .def(py::init<>())
      .def("add_input", &AtenGraph::add_input)
      .def("add_op", &AtenGraph::add_op)
      .def("add_arithmetic", &AtenGraph::add_arithmetic)
      .def("set_free_lists", &AtenGraph::set_free_lists)
      .def("set_outputs", &AtenGraph::set_outputs)
      .def("__call__", &AtenGraph::run);
}

}  // namespace tpu::python
