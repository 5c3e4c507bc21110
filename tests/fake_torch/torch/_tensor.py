"""Tensors of the stand-in torch (tests/fake_torch/): memory without values.

A CUDA tensor holds a block of the stand-in caching allocator for as long as Python holds it
(CPython drops it with its last reference, as PyTorch frees a tensor's storage); an
operation allocates its result where PyTorch would and launches a named kernel on the current
stream, but computes nothing. Autograd keeps what each operation saved until backward() has
run, then lets it go. That is enough for a training loop's memory to take PyTorch's shape:
what tests/gpu/smoke_train.py does runs here unchanged.
"""
import ctypes

import torch


class dtype:
    def __init__(self, name, itemsize):
        self.name = name
        self.itemsize = itemsize

    def __repr__(self):
        return "torch." + self.name


float32 = dtype("float32", 4)
uint8 = dtype("uint8", 1)


class device:
    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif ":" in type:
            type, index = type.split(":")
            index = int(index)
        if type not in ("cpu", "cuda"):
            raise RuntimeError("Expected one of cpu, cuda device type at start of device "
                               "string: " + type)
        self.type = type
        self.index = index

    def __eq__(self, other):
        other = device(other) if isinstance(other, str) else other
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return "device(type=%r)" % self.type
        return "device(type=%r, index=%d)" % (self.type, self.index)


def _as_device(d):
    """A concrete device: "cuda" alone is the current CUDA device, as PyTorch resolves it."""
    d = device("cpu") if d is None else device(d)
    if d.type == "cuda" and d.index is None:
        d = device("cuda", torch.cuda.current_device())
    return d


def _launch(op, tensor):
    """op's kernel on the current stream of the tensor's device (the current device for
    None), with that device current for the launch, as PyTorch's device guard makes it."""
    cuda = torch.cuda
    cuda.init()
    index = cuda.current_device() if tensor is None else tensor.device.index
    previous = cuda.current_device()
    if index != previous:
        cuda.set_device(index)
    try:
        stream = cuda.current_stream(index).cuda_stream
        ptr = 0 if tensor is None else tensor.data_ptr()
        if torch._lib.standin_launch(op.encode(), ctypes.c_uint64(stream),
                                     ctypes.c_uint64(ptr)) != 0:
            raise RuntimeError("CUDA error: launching %s failed" % op)
    finally:
        if index != previous:
            cuda.set_device(previous)


class _Node:
    """What an operation saved for backward (in its closure) and the tensors it came from."""

    def __init__(self, backward, inputs):
        self.backward = backward  # (grad, needs) -> a gradient or None per input
        self.inputs = inputs


class Tensor:
    def __init__(self, shape, dtype=float32, device=None, requires_grad=False):
        self._ptr = 0
        self.shape = tuple(int(n) for n in shape)
        self.dtype = dtype
        self.device = _as_device(device)
        self.requires_grad = requires_grad
        self.grad = None
        self.grad_fn = None
        if self.device.type == "cuda":
            self._ptr = torch.cuda._alloc(self.nbytes(), self.device.index)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def element_size(self):
        return self.dtype.itemsize

    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    def size(self):
        return self.shape

    def data_ptr(self):
        return self._ptr

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def __del__(self):
        self._release()

    def _release(self):
        ptr, self._ptr = self._ptr, 0
        if ptr:
            try:
                torch.cuda.caching_allocator_delete(ptr)
            except Exception:  # an interpreter shutting down has no allocator left
                pass

    def _move(self, to):
        """The storage moves to another device in place (what Module.to does to a parameter)."""
        to = _as_device(to)
        if to == self.device:
            return
        ptr = torch.cuda._alloc(self.nbytes(), to.index) if to.type == "cuda" else 0
        self._release()
        self._ptr, self.device = ptr, to
        if ptr:
            _launch("copy", self)

    def to(self, device):
        if _as_device(device) == self.device:
            return self
        out = Tensor(self.shape, self.dtype, device, self.requires_grad)
        if out.is_cuda:
            _launch("copy", out)
        return out

    def cuda(self, device=None):
        return self.to(torch.device("cuda", device))

    def add_(self, other):
        if self.is_cuda:
            _launch("elementwise", self)
        return self

    def record_stream(self, stream):
        torch.cuda.record_stream(self._ptr, stream)

    def backward(self):
        _backward(self)

    def __repr__(self):
        return "tensor(shape=%s, device=%s, dtype=%r)" % (self.shape, self.device, self.dtype)


def _result(shape, like, inputs, backward, op):
    """An operation's output on like's device, with a node for backward when an input needs
    a gradient."""
    out = Tensor(shape, like.dtype, like.device)
    if out.is_cuda:
        _launch(op, out)
    if any(t.requires_grad for t in inputs):
        out.requires_grad = True
        out.grad_fn = _Node(backward, inputs)
    return out


def _grad_like(t, op):
    g = Tensor(t.shape, t.dtype, t.device)
    if g.is_cuda:
        _launch(op, g)
    return g


def _backward(root):
    """Gradients from root back to the leaves, each node once in reverse topological order;
    a leaf's gradient goes to .grad (or is added to it), a node's saved tensors are dropped
    once it has run, as PyTorch frees them after backward()."""
    order, seen = [], set()
    stack = [(root, False)]
    while stack:
        t, done = stack.pop()
        if done:
            order.append(t)
            continue
        if id(t) in seen or t.grad_fn is None:
            continue
        seen.add(id(t))
        stack.append((t, True))
        stack.extend((i, False) for i in t.grad_fn.inputs)
    grads = {id(root): _grad_like(root, "elementwise")}
    for t in reversed(order):
        node = t.grad_fn
        g = grads.pop(id(t))
        if node.backward is None:
            raise RuntimeError("Trying to backward through the graph a second time")
        input_grads = node.backward(g, [i.requires_grad for i in node.inputs])
        del g
        for inp, ig in zip(node.inputs, input_grads):
            if ig is None:
                continue
            if inp.grad_fn is None:
                if inp.grad is None:
                    inp.grad = ig
                else:
                    _launch("elementwise", inp.grad)
            elif id(inp) in grads:
                _launch("elementwise", grads[id(inp)])
            else:
                grads[id(inp)] = ig
        node.backward, node.inputs = None, ()


def empty(*size, dtype=float32, device=None, requires_grad=False):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return Tensor(size, dtype, device, requires_grad)


def _filled(op, size, dtype, device, requires_grad):
    t = empty(*size, dtype=dtype, device=device, requires_grad=requires_grad)
    if t.is_cuda:
        _launch(op, t)
    return t


def randn(*size, dtype=float32, device=None, requires_grad=False):
    return _filled("normal", size, dtype, device, requires_grad)


def zeros(*size, dtype=float32, device=None, requires_grad=False):
    return _filled("elementwise", size, dtype, device, requires_grad)


def empty_like(t):
    return Tensor(t.shape, t.dtype, t.device)


def zeros_like(t):
    return zeros(t.shape, dtype=t.dtype, device=t.device)
