"""The "Forward-mode Automatic Differentiation (Beta)" tutorial (PyTorch tutorials,
intermediate/forward_ad_usage): dual tensors, a module's parameters made dual by hand and
through functional_call, a custom Function with a jvp (checked by gradcheck's
check_forward_ad), and torch.func.jvp, each checked against reverse mode."""
import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
from torch.func import functional_call

torch.manual_seed(0)

primal = torch.randn(10, 10)
tangent = torch.randn(10, 10)


def fn(x, y):
    return x ** 2 + y ** 2


# All forward AD computation must be performed in the context of a ``dual_level`` context.
with fwAD.dual_level():
    # To create a dual tensor we associate a tensor, which we call the primal with another
    # tensor of the same size, which we call the tangent.
    dual_input = fwAD.make_dual(primal, tangent)
    assert fwAD.unpack_dual(dual_input).tangent is tangent

    # To demonstrate the case where the copy of the tangent happens, we pass in a tangent
    # with a layout different from that of the primal
    dual_input_alt = fwAD.make_dual(primal, tangent.T)
    assert fwAD.unpack_dual(dual_input_alt).tangent is not tangent

    # Tensors that do not have an associated tangent are automatically considered to
    # have a zero-filled tangent of the same shape.
    plain_tensor = torch.randn(10, 10)
    dual_output = fn(dual_input, plain_tensor)

    # Unpacking the dual returns a ``namedtuple`` with ``primal`` and ``tangent``
    jvp = fwAD.unpack_dual(dual_output).tangent
    print(type(fwAD.unpack_dual(dual_output)).__name__, fwAD.unpack_dual(dual_output)._fields)
    print("jvp", jvp.shape, "max error vs 2 x t:",
          (jvp - 2 * primal * tangent).abs().max().item() < 1e-6)

assert fwAD.unpack_dual(dual_output).tangent is None

# Usage with Modules
model = nn.Linear(5, 5)
input = torch.randn(16, 5)

params = {name: p for name, p in model.named_parameters()}
tangents = {name: torch.rand_like(p) for name, p in params.items()}

with fwAD.dual_level():
    for name, p in params.items():
        delattr(model, name)
        setattr(model, name, fwAD.make_dual(p, tangents[name]))

    out = model(input)
    jvp = fwAD.unpack_dual(out).tangent
    print("module jvp", jvp.shape)

# Using the functional Module API
model = nn.Linear(5, 5)
params = {name: p for name, p in model.named_parameters()}
tangents = {name: torch.rand_like(p) for name, p in params.items()}
with fwAD.dual_level():
    dual_params = {}
    for name, p in params.items():
        dual_params[name] = fwAD.make_dual(p, tangents[name])
    out = functional_call(model, dual_params, input)
    jvp = fwAD.unpack_dual(out).tangent
    print(out.grad_fn is not None, jvp.shape)

# Check our results: the JVP is input @ dW.T + db
expected = input @ tangents["weight"].T + tangents["bias"]
print("functional_call jvp matches:", torch.allclose(jvp, expected, atol=1e-6))


# Custom autograd Function
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, foo):
        result = torch.exp(foo)
        # Tensors stored in ``ctx`` can be used in the subsequent forward grad computation.
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gI):
        gO = gI * ctx.result
        # If the tensor stored in`` ctx`` will not also be used in the backward pass,
        # one can manually free it using ``del``
        del ctx.result
        return gO


fn = Fn.apply

primal = torch.randn(10, 10, dtype=torch.double, requires_grad=True)
tangent = torch.randn(10, 10)

with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    dual_output = fn(dual_input)
    jvp = fwAD.unpack_dual(dual_output).tangent
    print("custom jvp matches:", torch.allclose(jvp, tangent * primal.exp()))

# It is important to use ``autograd.gradcheck`` to verify that your custom autograd
# Function computes the gradients correctly. By default, ``gradcheck`` only checks the
# backward-mode (reverse-mode) AD gradients. Specify ``check_forward_ad=True`` to also
# check forward grads. If you did not implement the backward formula for your function,
# you can also tell ``gradcheck`` to skip the tests that require backward-mode AD by
# specifying ``check_backward_ad=False``, ``check_undefined_grad=False``, and
# ``check_batched_grad=False``.
print("gradcheck:", torch.autograd.gradcheck(
    Fn.apply, (primal[:2, :3].detach().clone().requires_grad_(),), check_forward_ad=True,
    check_backward_ad=False, check_undefined_grad=False, check_batched_grad=False))

# Functional API
primal0 = torch.randn(10, 10)
tangent0 = torch.randn(10, 10)
primal1 = torch.randn(10, 10)
tangent1 = torch.randn(10, 10)


def fn(x, y):
    return x ** 2 + y ** 2


primal_out, tangent_out = torch.func.jvp(fn, (primal0, primal1), (tangent0, tangent1))
print("func.jvp matches:",
      torch.allclose(tangent_out, 2 * primal0 * tangent0 + 2 * primal1 * tangent1,
                     atol=1e-5))

# the JVP agrees with reverse mode's Jacobian: J v, row by row
x = torch.randn(4, dtype=torch.double)
v = torch.randn(4, dtype=torch.double)


def f(x):
    return torch.stack([x.sin().sum(), (x * x).prod(), torch.softmax(x, 0)[1]])


with fwAD.dual_level():
    jv = fwAD.unpack_dual(f(fwAD.make_dual(x, v))).tangent
J = torch.autograd.functional.jacobian(f, x)
print("forward vs reverse:", torch.allclose(jv, J @ v), f"{(jv - J @ v).abs().max().item():.1e}")
print(f"jvp {jv.tolist()[0]:.6f}")
