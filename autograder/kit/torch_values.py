"""PyTorch's float64 values, the expected side of the checks that compare with PyTorch (lessons 8, 9, 12 to 14).

Each function imports torch itself and returns plain data. The judgements call
them through `reference.compute(fn, *args)`, which keeps the result with the
reference's answers: a run whose values are already known never imports torch
on the trusted side (importing it is most of a cold grading run's cost).
"""

from __future__ import annotations

from autograder.worker.scenario import headline_expression, sanity_expression


def _tensor(values, grad: bool = False):
    import torch

    return torch.tensor(values, dtype=torch.double, requires_grad=grad)


def headline(av: float, bv: float) -> list[float]:
    """[g, dg/da, dg/db] of the headline expression at a = av, b = bv."""
    import torch

    a, b = _tensor(av, grad=True), _tensor(bv, grad=True)
    g = headline_expression(a, b, torch.relu)
    g.backward()
    return [g.item(), a.grad.item(), b.grad.item()]


def sanity(xv: float) -> list[float]:
    """[y, dy/dx] of the sanity expression at x = xv."""
    import torch

    x = _tensor(xv, grad=True)
    y = sanity_expression(x, torch.relu)
    y.backward()
    return [y.item(), x.grad.item()]


def tanh(xs: list[float]) -> list[float]:
    """torch.tanh(x), element by element."""
    import torch

    return torch.tanh(_tensor(xs)).tolist()


def tanh_backward(xs: list[float], gs: list[float]) -> list[float]:
    """(1 - tanh(x)²)·g, element by element: what tanh's backward returns for the gradient g."""
    import torch

    return ((1 - torch.tanh(_tensor(xs)) ** 2) * _tensor(gs)).tolist()


def uniform(seed: int, n: int, low: float, high: float) -> list[float]:
    """n numbers in [low, high) from torch's seeded generator (the same numbers on every machine)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(n, dtype=torch.double, generator=gen) * (high - low) + low).tolist()


def unary(name: str, x: float) -> list[float]:
    """[value, derivative] of torch.sigmoid or torch.log at x."""
    import torch

    v = _tensor(x, grad=True)
    out = torch.sigmoid(v) if name == "sigmoid" else torch.log(v)
    out.backward()
    return [out.item(), v.grad.item()]


def composite(text: str, values: dict[str, float]) -> list:
    """[value, {leaf: grad}] of an expression of sigmoid and log over the named leaves."""
    import torch

    leaves = {name: _tensor(x, grad=True) for name, x in values.items()}
    out = eval(text, {"__builtins__": {}}, {"sigmoid": torch.sigmoid, "log": torch.log, **leaves})
    out.backward()
    return [out.item(), {name: v.grad.item() for name, v in leaves.items()}]


def softmax(logits: list[float], weights: list[float]) -> list[list[float]]:
    """[softmax(logits), the logits' grads of Σ w[k]·p[k]]."""
    import torch

    s = _tensor(logits, grad=True)
    p = torch.softmax(s, 0)
    (p * _tensor(weights)).sum().backward()
    return [p.tolist(), s.grad.tolist()]


def cross_entropy(logits: list[float], target: int) -> list:
    """[F.cross_entropy(logits, target), the logits' grads]."""
    import torch
    import torch.nn.functional as F

    s = _tensor(logits, grad=True)
    out = F.cross_entropy(s[None], torch.tensor([target]))
    out.backward()
    return [out.item(), s.grad.tolist()]


def _sgd_step(params, grads, buffers, lr: float, beta: float) -> None:
    """One step of `torch.optim.SGD(params, lr, momentum=beta)`, in place, momentum buffers in `buffers`.

    `torch.optim.sgd.sgd` is the update `SGD.step()` runs; the class itself is
    left out because building one imports torch._dynamo (about 5 s).
    """
    from torch.optim.sgd import sgd

    sgd(params, grads, buffers, weight_decay=0.0, momentum=beta, lr=lr, dampening=0.0, nesterov=False, maximize=False)


def sgd_steps(datas: list[float], grads_per_step: list[list[float]], lr: float, beta: float) -> list[list[float]]:
    """The parameters after each step of SGD with momentum, given the grads of each step."""
    p, buffers, after = _tensor(datas), [None], []
    for grads in grads_per_step:
        _sgd_step([p], [_tensor(grads)], buffers, lr, beta)
        after.append(p.tolist())
    return after


def sgd_descent(start: list[float], centre: list[float], lr: float, beta: float, steps: int) -> list:
    """SGD with momentum on Σ (p - c)², gradients by PyTorch's autograd: [the loss of each step, the end point]."""
    import torch

    p, c = _tensor(start, grad=True), _tensor(centre)
    buffers, history = [None], []
    for _ in range(steps):
        total = ((p - c) ** 2).sum()
        (grad,) = torch.autograd.grad(total, [p])
        with torch.no_grad():
            _sgd_step([p], [grad], buffers, lr, beta)
        history.append(total.item())
    return [history, p.tolist()]


# --- lesson 14: tensors -------------------------------------------------------------------------------------------


def elementwise(op: str, a, b, g) -> list:
    """[A op B, A.grad, B.grad] for `+` or `*` with broadcasting, the output's gradient being `g`."""
    A, B = _tensor(a, grad=True), _tensor(b, grad=True)
    out = A + B if op == "+" else A * B
    out.backward(_tensor(g))
    return [out.tolist(), A.grad.tolist(), B.grad.tolist()]


def matmul(a, b, g) -> list:
    """[A @ B, A.grad, B.grad], the product's gradient being `g`."""
    A, B = _tensor(a, grad=True), _tensor(b, grad=True)
    out = A @ B
    out.backward(_tensor(g))
    return [out.tolist(), A.grad.tolist(), B.grad.tolist()]


def tensor_unary(name: str, x, g) -> list:
    """[out, A.grad] for out = A.tanh() or A.sum(), the output's gradient being `g`."""
    A = _tensor(x, grad=True)
    out = A.tanh() if name == "tanh" else A.sum()
    out.backward(_tensor(g))
    return [out.tolist(), A.grad.tolist()]


def tensor_mlp(weights: list, biases: list, xs: list, ys: list) -> dict:
    """Σ (ŷ - y)² of the network tanh(x @ W + b) layer by layer on the batch xs, and the grads of every W and b."""
    import torch

    ws = [_tensor(w, grad=True) for w in weights]
    bs = [_tensor([b], grad=True) for b in biases]
    x = _tensor(xs)
    for w, b in zip(ws, bs, strict=True):
        x = torch.tanh(x @ w + b)
    loss = ((x - _tensor(ys).reshape(-1, 1)) ** 2).sum()
    loss.backward()
    return {
        "loss": loss.item(),
        "weight_grads": [w.grad.tolist() for w in ws],
        "bias_grads": [b.grad.tolist() for b in bs],
    }
