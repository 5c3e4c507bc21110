"""torch.nn.functional of the stand-in torch: the operations tests/gpu/smoke_train.py uses,
with PyTorch's allocations (outputs; on backward, a gradient per input that needs one)."""
from torch._tensor import _grad_like, _result


def linear(input, weight, bias=None):
    inputs = (input, weight) + ((bias,) if bias is not None else ())

    def backward(grad, needs):
        grads = [_grad_like(input, "gemm") if needs[0] else None,
                 _grad_like(weight, "gemm") if needs[1] else None]
        if bias is not None:
            grads.append(_grad_like(bias, "reduce") if needs[2] else None)
        return grads

    return _result((input.shape[0], weight.shape[0]), input, inputs, backward, "gemm")


def relu(input):
    def backward(grad, needs):
        return [_grad_like(input, "elementwise") if needs[0] else None]

    return _result(input.shape, input, (input,), backward, "elementwise")


def mse_loss(input, target):
    def backward(grad, needs):
        return [_grad_like(t, "elementwise") if need else None
                for t, need in zip((input, target), needs)]

    return _result((), input, (input, target), backward, "reduce")
