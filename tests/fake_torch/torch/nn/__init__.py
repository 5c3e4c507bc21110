"""torch.nn of the stand-in torch: modules whose parameters are stand-in tensors."""
from torch import _tensor
from torch.nn import functional


class Module:
    def __init__(self):
        self._parameters = {}
        self._modules = []

    def parameters(self):
        yield from self._parameters.values()
        for m in self._modules:
            yield from m.parameters()

    def to(self, device):
        """Parameters move in place, as PyTorch's Module.to moves their data."""
        for p in self.parameters():
            p._move(device)
            p.grad = None
        return self

    def cuda(self, device=None):
        return self.to(_tensor.device("cuda", device))

    def zero_grad(self, set_to_none=True):
        for p in self.parameters():
            p.grad = None

    def __call__(self, *args):
        return self.forward(*args)


class Linear(Module):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self._parameters["weight"] = _tensor.Tensor((out_features, in_features), requires_grad=True)
        if bias:
            self._parameters["bias"] = _tensor.Tensor((out_features,), requires_grad=True)

    def forward(self, input):
        return functional.linear(input, self._parameters["weight"], self._parameters.get("bias"))


class ReLU(Module):
    def forward(self, input):
        return functional.relu(input)


class Sequential(Module):
    def __init__(self, *modules):
        super().__init__()
        self._modules = list(modules)

    def forward(self, input):
        for m in self._modules:
            input = m(input)
        return input
