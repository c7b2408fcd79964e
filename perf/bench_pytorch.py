#!/usr/bin/env python3
"""perf/workloads.cpp's rows in PyTorch, eager and with torch.compile, on one device: the peer of
`kiln bench --device cuda` on a GPU machine (scripts/gpu-check.sh runs both in one session).

    python3 perf/bench_pytorch.py [--device cuda] [--min-time 0.2] [--json FILE] [--no-compile]

Each row times what kiln's row times (same sizes, same steps), waiting for the device at the end
of every iteration; prints one line per row and side (milliseconds per iteration) and, with
--json, writes {"device": ..., "rows": {name: {"eager_ms": ..., "compile_ms": ...}}}. The seeds
differ from kiln's (PyTorch's CUDA generator is not kiln's), so there is no check value."""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def timed(step, device, min_time):
    """Milliseconds per call of step(), after two warm-up calls (compiles happen there)."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(2):
        step()
    sync()
    iterations, start = 0, time.perf_counter()
    while True:
        step()
        sync()
        iterations += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_time and iterations >= 3:
            return elapsed / iterations * 1e3


def gelu_chain(x):
    x3 = x * x * x
    inner = (x + x3 * 0.044715) * 0.7978845608
    return (x * 0.5) * (torch.tanh(inner) + 1.0)


def tiny_ops(x):
    for _ in range(500):
        x = x * 1.0001
        x = x + 0.0001
        x = torch.relu(x)
        x = x * 0.9999
    return x


class Mlp(nn.Module):  # perf/bench_mlp.h
    def __init__(self):
        super().__init__()
        self.fc1, self.ln1 = nn.Linear(784, 512), nn.LayerNorm(512)
        self.fc2, self.ln2 = nn.Linear(512, 512), nn.LayerNorm(512)
        self.fc3 = nn.Linear(512, 10)

    def forward(self, x):
        x = F.gelu(self.ln1(self.fc1(x)))
        x = F.gelu(self.ln2(self.fc2(x)))
        return self.fc3(x)


def cnn():  # cli/models.h's make_cnn
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def rows(device, compiled):
    """(name, step) for each row; `compiled` wraps the row's computation in torch.compile."""
    wrap = torch.compile if compiled else (lambda f: f)
    opts = dict(device=device)
    torch.manual_seed(0)

    x = torch.randn(1 << 22, **opts)
    gelu = wrap(gelu_chain)
    yield "GeluChain", lambda: gelu(x)

    tiny = wrap(tiny_ops)
    yield "TinyOps", lambda: tiny(torch.ones(8, **opts))[0].item()

    ln = nn.LayerNorm(1024).to(device)
    xl = torch.randn(512, 1024, requires_grad=True, **opts)
    grad = torch.randn(512, 1024, **opts)
    forward = wrap(lambda t: F.gelu(ln(t)))

    def layer_norm_gelu():
        xl.grad = None
        ln.zero_grad()
        forward(xl).backward(grad)
    yield "LayerNormGelu", layer_norm_gelu

    logits = torch.randn(2048, 1000, requires_grad=True, **opts)
    labels = torch.randint(0, 1000, (2048,), **opts)
    loss_of = wrap(F.cross_entropy)

    def softmax_cross_entropy():
        logits.grad = None
        loss_of(logits, labels).backward()
    yield "SoftmaxCrossEntropy", softmax_cross_entropy

    params = [torch.randn(256, 256, requires_grad=True, **opts) for _ in range(40)]
    for p in params:
        p.grad = torch.randn(256, 256, **opts)
    adam = torch.optim.Adam(params, lr=1e-3)
    adam_step = wrap(adam.step) if compiled else adam.step
    yield "AdamStep", adam_step

    for name, net, shape in (("MlpStep", Mlp(), (256, 784)), ("CnnStep", cnn(), (64, 1, 28, 28))):
        net = net.to(device)
        model = wrap(net)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        data = torch.randn(*shape, **opts)
        target = torch.randint(0, 10, (shape[0],), **opts)

        def train_step(model=model, opt=opt, data=data, target=target):
            opt.zero_grad()
            F.cross_entropy(model(data), target).backward()
            opt.step()
        yield name, train_step

    a, b = torch.randn(1024, 1024, **opts), torch.randn(1024, 1024, **opts)
    yield "Sgemm", lambda: torch.mm(a, b)

    big = torch.randn(1 << 24, **opts)
    yield "DeviceCopy", lambda: torch.neg(big)  # kiln's bandwidth row (perf/workloads.cpp)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--min-time", type=float, default=0.2)
    parser.add_argument("--json")
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"PyTorch {torch.__version__} on {device} ({name})")
    results = {}
    for compiled in (False,) if args.no_compile else (False, True):
        side = "compile" if compiled else "eager"
        for row, step in rows(device, compiled):
            ms = timed(step, device, args.min_time)
            results.setdefault(row, {})[side + "_ms"] = ms
            print(f"  pytorch {side:8s} {row:20s} {ms:10.4g} ms", flush=True)
    if "DeviceCopy" in results:
        ms = results["DeviceCopy"]["eager_ms"]
        print(f"device copy-like pass: {2 * 4 * (1 << 24) / (ms * 1e-3) / 1e9:.1f} GB/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": str(device), "name": name, "torch": torch.__version__, "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
