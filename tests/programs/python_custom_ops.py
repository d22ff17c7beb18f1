"""The "Python Custom Operators" tutorial (pytorch.org/tutorials/advanced/python_custom_ops):
wrap Python/NumPy code into custom operators that work with autograd and torch.compile.
(The tutorial crops a PIL image; here the crop is NumPy slicing of a synthetic image.)"""
from typing import Sequence  # noqa: UP035 (the tutorial imports it so)

import numpy as np
import torch
from torch import Tensor

torch.manual_seed(0)


def to_image(pic: Tensor) -> np.ndarray:
    """CHW tensor -> HWC array, as torchvision's to_pil_image hands PIL its pixels."""
    return pic.detach().cpu().permute(1, 2, 0).numpy()


def image_crop(img: np.ndarray, box: Sequence[int]) -> np.ndarray:
    x0, y0, x1, y1 = box
    return np.ascontiguousarray(img[y0:y1, x0:x1])


def image_to_tensor(img: np.ndarray) -> Tensor:
    """HWC array -> CHW tensor (a permuted view, as pil_to_tensor returns)."""
    return torch.from_numpy(img).permute(2, 0, 1)


# -- Wrapping the function with torch.library.custom_op ----------------------------------
@torch.library.custom_op("mylib::crop", mutates_args=())
def crop(pic: Tensor, box: Sequence[int]) -> Tensor:
    img = to_image(pic)
    cropped_img = image_crop(img, box)
    return image_to_tensor(cropped_img).to(pic.device, pic.dtype)


print(crop)
print(torch.ops.mylib.crop.default._schema)


@crop.register_fake
def _(pic, box):
    channels = pic.shape[0]
    x0, y0, x1, y1 = box
    result = pic.new_empty(y1 - y0, x1 - x0, channels).permute(2, 0, 1)
    return result


img = torch.rand(3, 64, 64)
cropped_img = crop(img, (10, 10, 50, 50))
print("cropped", tuple(cropped_img.shape), f"{cropped_img.sum().item():.4f}")
print("matches slicing:", torch.equal(cropped_img, img[:, 10:50, 10:50]))

meta = crop(torch.empty(3, 64, 64, device="meta"), (8, 4, 40, 20))
print("fake kernel:", meta.shape, meta.device, meta.dtype)


@torch.compile(fullgraph=True)
def f(img):
    return crop(img, (10, 10, 50, 50))


for i in range(4):
    frame = torch.rand(3, 64, 64)
    out = f(frame)
    print(f"compiled call {i}: equal to eager {torch.equal(out, crop(frame, (10, 10, 50, 50)))}")


# -- Adding training support -------------------------------------------------------------
def backward(ctx, grad_output):
    grad_input = grad_output.new_zeros(ctx.pic_shape)
    grad_input[..., ctx.y0:ctx.y1, ctx.x0:ctx.x1] = grad_output
    return grad_input, None


def setup_context(ctx, inputs, output):
    pic, box = inputs
    ctx.pic_shape = pic.shape
    ctx.x0, ctx.y0, ctx.x1, ctx.y1 = box


crop.register_autograd(backward, setup_context=setup_context)

img = img.requires_grad_()
result = crop(img, (10, 10, 50, 50))
print(result.grad_fn.name() if hasattr(result.grad_fn, "name") else type(result.grad_fn).__name__)
result.sum().backward()
print("grad sum", img.grad.sum().item(), "grad inside", img.grad[0, 10, 10].item(),
      "outside", img.grad[0, 0, 0].item())

# -- Testing Python Custom operators -----------------------------------------------------
examples = [
    [torch.randn(3, 64, 64), [0, 0, 10, 10]],
    [torch.randn(3, 91, 91, requires_grad=True), [10, 0, 20, 10]],
    [torch.randn(3, 60, 60, dtype=torch.double), [3, 4, 32, 20]],
    [torch.randn(3, 512, 512, requires_grad=True, dtype=torch.double), [3, 4, 32, 45]],
]
for example in examples:
    print(torch.library.opcheck(crop, example))


# -- Mutable Python Custom operators -----------------------------------------------------
@torch.library.custom_op("mylib::numpy_sin", mutates_args={"output"}, device_types="cpu")
def numpy_sin(input: Tensor, output: Tensor) -> None:
    assert input.device == output.device
    assert input.device.type == "cpu"
    input_np = input.numpy()
    output_np = output.numpy()
    np.sin(input_np, out=output_np)


print(torch.ops.mylib.numpy_sin.default._schema)


@torch.compile(fullgraph=True)
def g(x):
    out = torch.empty(3)
    numpy_sin(x, out)
    return out


for i in range(4):
    x = torch.randn(3)
    y = g(x)
    assert torch.allclose(y, x.sin())
    print(f"numpy_sin {i}:", [f"{v:.4f}" for v in y.tolist()])

example_inputs = [
    [torch.randn(3), torch.empty(3)],
    [torch.randn(0, 3), torch.empty(0, 3)],
    [torch.randn(1, 2, 3, 4, dtype=torch.double), torch.empty(1, 2, 3, 4, dtype=torch.double)],
]
for example in example_inputs:
    print(torch.library.opcheck(numpy_sin, example))


# -- a functional numpy op with autograd, trained through ------------------------------
@torch.library.custom_op("mylib::numpy_tanh", mutates_args=())
def numpy_tanh(x: Tensor) -> Tensor:
    return torch.from_numpy(np.tanh(x.numpy()))


@numpy_tanh.register_fake
def _(x):
    return torch.empty_like(x)


def tanh_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def tanh_backward(ctx, grad):
    (y,) = ctx.saved_tensors
    return grad * (1 - y * y)


numpy_tanh.register_autograd(tanh_backward, setup_context=tanh_setup)

model = torch.nn.Linear(4, 4)
head = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.1)
data = torch.randn(64, 4)
target = data.sum(dim=1, keepdim=True).tanh()
for step in range(30):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(head(numpy_tanh(model(data))), target)
    loss.backward()
    opt.step()
    if step % 10 == 0 or step == 29:
        print(f"step {step} loss {loss.item():.5f}")

try:
    torch.library.custom_op("nonamespace", mutates_args=())(lambda x: x)
except ValueError as e:
    print("ValueError:", e)
