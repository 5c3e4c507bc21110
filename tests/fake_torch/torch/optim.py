"""torch.optim of the stand-in torch: Adam's memory (two state tensors per parameter, made at
its first step) and its kernels."""
from torch import _tensor


class Adam:
    def __init__(self, params, lr=1e-3):
        self.params = list(params)
        self.lr = lr
        self.state = {}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def step(self):
        for p in self.params:
            if p.grad is None:
                continue
            if id(p) not in self.state:
                self.state[id(p)] = (_tensor.zeros_like(p), _tensor.zeros_like(p))
            if p.is_cuda:
                _tensor._launch("adam", p)
