"""Benchmark: the lesson-12 demo (100 steps, full batch of 100 moons, MLP(2, [16, 16, 1])).

    pip install micrograd==0.1.0   # the original, as the baseline
    python tests/benchmarks/bench_demo.py [--steps 100]

Runs the reference's `train_classifier`, then the same training written
against the PyPI package `micrograd` 0.1.0 as its demo does it (Python's
garbage collector left on), then micrograd with the collector run once per
step, and PyTorch on tensors; prints each time and the ratios to the reference.
Each runs in its own process so that none inherits another's heap.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

REFERENCE = """
from solutions.classifier import moons, classifier_model, train_classifier
X, y = moons()
history = train_classifier(classifier_model(), X, y, steps=STEPS)
print(f"final loss {history[-1][0]:.4f}, accuracy {history[-1][1]:.2f}")
"""

MICROGRAD = """
import gc, random
from micrograd.engine import Value
from micrograd.nn import MLP
from solutions.classifier import moons
X, y = moons()
random.seed(1337)
model = MLP(2, [16, 16, 1])

def step(k):
    scores = [model([Value(a), Value(b)]) for a, b in X]
    losses = [(1 + -yi * si).relu() for yi, si in zip(y, scores)]
    loss = sum(losses) * (1.0 / len(losses)) + 1e-4 * sum(p * p for p in model.parameters())
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= (1.0 - 0.9 * k / STEPS) * p.grad
    return loss.data, sum((s.data > 0) == (yi > 0) for yi, s in zip(y, scores)) / len(y)

if ONCE_PER_STEP:
    gc.disable()
for k in range(STEPS):
    loss, accuracy = step(k)
    if ONCE_PER_STEP:
        gc.collect()  # the step's graph is garbage now, as in the reference
print(f"final loss {loss:.4f}, accuracy {accuracy:.2f}")
"""

TORCH = """
import torch
from solutions.classifier import moons
X, y = moons()
X, y = torch.tensor(X, dtype=torch.float64), torch.tensor(y, dtype=torch.float64)
torch.manual_seed(1337)
model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 1)).double()
import time; start = time.perf_counter()
for k in range(STEPS):
    scores = model(X).squeeze(1)
    loss = torch.relu(1 - y * scores).mean() + 1e-4 * sum((p * p).sum() for p in model.parameters())
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= (1.0 - 0.9 * k / STEPS) * p.grad
accuracy = ((scores > 0) == (y > 0)).double().mean().item()
print(f"final loss {loss.item():.4f}, accuracy {accuracy:.2f}, training loop alone {time.perf_counter() - start:.3f} s")
"""


def run(name: str, code: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    result = proc.stdout.strip() or proc.stderr.strip().splitlines()[-1]
    print(f"{name:<42} {seconds:8.2f} s   {result}", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()
    steps = f"STEPS = {args.steps}\n"
    times = {
        "reference (collector once per step)": run("reference (collector once per step)", steps + REFERENCE),
        "micrograd 0.1.0 (collector on, as its demo)": run(
            "micrograd 0.1.0 (collector on, as its demo)", steps + "ONCE_PER_STEP = False\n" + MICROGRAD
        ),
        "micrograd 0.1.0 (collector once per step)": run(
            "micrograd 0.1.0 (collector once per step)", steps + "ONCE_PER_STEP = True\n" + MICROGRAD
        ),
        "PyTorch on tensors (process incl. import)": run("PyTorch on tensors (process incl. import)", steps + TORCH),
    }
    base = times["reference (collector once per step)"]
    for name, seconds in times.items():
        print(f"{name:<42} {seconds / base:8.2f}x the reference")


if __name__ == "__main__":
    main()
