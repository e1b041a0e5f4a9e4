"""Real runs behind tests/data/lookup_variants.json: the errors of appendix A produced by code that
is NOT the course's (other shapes, names, numbers, op names), for tests/test_lookup_appendix.py.

Each case is (name, the link of the appendix entry that must come first, code). The code runs as
the file snippet.py in a temporary directory with the project's torch, in a process forked from
one that has imported torch (as the course's warm runner does; an uncaught exception prints the
same traceback ``python snippet.py`` would, minus nothing but this harness's frames); the cases
that start DataLoader workers with spawn run as ``python snippet.py`` itself. The whole output
(stdout then stderr, as a learner would paste it) is stored next to the code that produced it.
Run again after changing a case: ``python tests/data/make_lookup_variants.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CASES = [
    ("view-transposed", "01#view-vs-reshape", "import torch\nx = torch.randn(5, 7).t()\nflat = x.view(35)\n"),
    ("negative-step", "01#stride", "import torch\nrev = torch.arange(10)[::-2]\n"),
    ("expand-add", "01#expand", "import torch\nm = torch.zeros(1, 4).expand(3, 4)\nm.add_(1)\n"),
    ("overlap-copy", "01#inplace-through-view", "import torch\nx = torch.arange(10.)\nx[1:].add_(x[:-1])\n"),
    ("broadcast", "01#expand", "import torch\nh = torch.ones(5, 8)\nb = torch.ones(4)\nout = h + b\n"),
    ("int-grad", "02#requires-grad", "import torch\nidx = torch.zeros(3, dtype=torch.long, requires_grad=True)\n"),
    ("nonleaf-grad", "02#leaves", "import torch\na = torch.ones(2, requires_grad=True)\nb = (a * 3).exp()\nb.sum().backward()\nprint(b.grad)\n"),
    ("optim-nonleaf", "02#leaves", "import torch\nw = torch.ones(3, requires_grad=True) * 2\nopt = torch.optim.Adam([w])\n"),
    ("second-backward", "02#second-backward", "import torch\nw = torch.randn(4, 4, requires_grad=True)\nloss = w.exp().sum()\nloss.backward()\nloss.backward()\n"),
    ("non-scalar", "02#non-scalar", "import torch\nx = torch.ones(2, 3, requires_grad=True)\n(x * 2).backward()\n"),
    ("grad-unused", "02#autograd-grad", "import torch\na = torch.ones(2, requires_grad=True)\nb = torch.ones(2, requires_grad=True)\nc = torch.ones(2, requires_grad=True)\ny = (a * c).sum()\ntorch.autograd.grad(y, [a, b, c])\n"),
    ("no-grad-loss", "04#no-grad", "import torch\nmodel = torch.nn.Linear(4, 1)\nwith torch.no_grad():\n    loss = model(torch.randn(8, 4)).pow(2).mean()\nloss.backward()\n"),
    ("leaf-mul", "03#leaf-inplace", "import torch\nweight = torch.zeros(3, 5, requires_grad=True)\nweight.mul_(2)\n"),
    ("saved-exp", "03#saved-modified", "import torch\na = torch.randn(3, 4, requires_grad=True)\nb = a.exp()\nb.add_(1)\nb.sum().backward()\n"),
    ("saved-tanh-v2", "03#saved-modified", "import torch\na = torch.randn(10, requires_grad=True)\nt = torch.tanh(a)\nt.mul_(2)\nt.mul_(2)\nt.sum().backward()\n"),
    ("anomaly-exp", "03#anomaly", "import torch\ntorch.autograd.set_detect_anomaly(True)\na = torch.randn(2, 5, requires_grad=True)\nb = a.exp()\nb[0] = 0\nb.sum().backward()\n"),
    ("same-counter-slice", "03#same-counter", "import torch\nv = torch.randn(3, 4, requires_grad=True)\nh = v * 2\nz = h[0].sin()\nh[2, 1] = 5.0\nz.sum().backward()\n"),
    ("view-of-leaf", "03#view-of-leaf", "import torch\nw = torch.ones(4, 4, requires_grad=True)\nw[1].zero_()\n"),
    ("view-nograd", "03#view-nograd", "import torch\nbase = torch.ones(6, requires_grad=True).clone()\nwith torch.no_grad():\n    head = base[:3]\nhead.mul_(2)\n"),
    ("chunk-inplace", "03#multi-output-view", "import torch\na = torch.randn(6, requires_grad=True) * 1\np, q = a.chunk(2)\np.mul_(2)\n"),
    ("numpy-grad", "04#numpy", "import torch\nlogits = torch.randn(2, 2, requires_grad=True)\narr = logits.numpy()\n"),
    ("freeze-nonleaf", "04#freeze", "import torch\nfeat = torch.ones(2, requires_grad=True) * 2\nfeat.requires_grad_(False)\n"),
    ("inference-saved", "04#inference-mode", "import torch\nwith torch.inference_mode():\n    cached = torch.ones(5)\nw = torch.ones(5, requires_grad=True)\ny = w * cached\n"),
    ("inference-inplace", "04#inference-mode", "import torch\nwith torch.inference_mode():\n    stats = torch.zeros(3)\nstats.add_(1)\n"),
    ("getattr-typo", "05#getattr", "import torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.encoder = nn.Linear(2, 2)\nm = Model()\nm.encodr\n"),
    ("assign-bias", "05#getattr", "import torch, torch.nn as nn\nconv = nn.Conv2d(1, 1, 3)\nconv.bias = torch.zeros(1)\n"),
    ("dtype-double", "05#plain-list", "import torch, torch.nn as nn\nhead = nn.Linear(3, 2).double()\nhead(torch.randn(4, 3))\n"),
    ("dotted-key", "05#containers", "import torch.nn as nn\nheads = nn.ModuleDict({'cls.head': nn.Linear(1, 1)})\n"),
    ("buffer-clash", "05#buffers", "import torch, torch.nn as nn\nm = nn.Linear(2, 2)\nm.register_buffer('bias', torch.zeros(2))\n"),
    ("attr-tensor-meta", "05#to-leaves-behind", "import torch, torch.nn as nn\nclass Scale(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.proj = nn.Linear(4, 4)\n        self.gain = torch.full((4,), 2.0)\n    def forward(self, x):\n        return self.proj(x) * self.gain\nnet = Scale().to('meta')\nnet(torch.zeros(5, 4, device='meta'))\n"),
    ("missing-super", "05#missing-super", "import torch.nn as nn\nclass Encoder(nn.Module):\n    def __init__(self):\n        self.conv = nn.Conv2d(1, 1, 1)\nEncoder()\n"),
    ("hook-relu-inplace", "05#hook-inplace", "import torch, torch.nn as nn\nlin = nn.Linear(4, 4)\nlin.register_full_backward_hook(lambda m, gi, go: None)\nout = nn.ReLU(inplace=True)(lin(torch.randn(2, 4)))\n"),
    ("size-mismatch", "06#size-mismatch", "import torch.nn as nn\nclf = nn.Linear(8, 3)\nclf.load_state_dict(nn.Linear(8, 7).state_dict())\n"),
    ("whole-checkpoint", "06#missing-unexpected", "import torch.nn as nn\nnet = nn.Linear(2, 2)\nckpt = {'state_dict': net.state_dict(), 'optimizer': {}, 'step': 10}\nnet.load_state_dict(ckpt)\n"),
    ("numpy-in-ckpt", "06#weights-only", "import numpy as np, torch\ntorch.save({'best_loss': np.float64(0.25)}, 'ckpt.pt')\ntorch.load('ckpt.pt')\n"),
    ("bn-one-2d", "07#batch-size-one", "import torch, torch.nn as nn\nbn = nn.BatchNorm2d(16)\nbn(torch.randn(1, 16, 1, 1))\n"),
    ("worker-keyerror", "08#worker-error", "import torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Pairs(Dataset):\n    def __len__(self):\n        return 4\n    def __getitem__(self, i):\n        return {'a': i}['b']\nif __name__ == '__main__':\n    next(iter(DataLoader(Pairs(), num_workers=2)))\n"),
    ("spawn-lambda", "08#pickle", "import torch\nfrom torch.utils.data import DataLoader\nif __name__ == '__main__':\n    dl = DataLoader(list(range(6)), batch_size=2, num_workers=1, collate_fn=lambda b: b, multiprocessing_context='spawn')\n    next(iter(dl))\n"),
    ("old-style-vmap", "09#old-style", "import torch\nclass Cube(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        ctx.save_for_backward(x)\n        return x ** 3\n    @staticmethod\n    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return 3 * x ** 2 * g\ntorch.vmap(Cube.apply)(torch.randn(4, 2))\n"),
    ("too-few-grads", "09#backward-returns", "import torch\nclass Blend(torch.autograd.Function):\n    @staticmethod\n    def forward(x, y, alpha):\n        return alpha * x + (1 - alpha) * y\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        pass\n    @staticmethod\n    def backward(ctx, g):\n        return g\nx = torch.ones(2, requires_grad=True)\nBlend.apply(x, torch.ones(2), 0.3).sum().backward()\n"),
    ("once-differentiable", "09#once-differentiable", "import torch\nfrom torch.autograd.function import once_differentiable\nclass Sq(torch.autograd.Function):\n    @staticmethod\n    def forward(x):\n        return x * x\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        ctx.save_for_backward(inputs[0])\n    @staticmethod\n    @once_differentiable\n    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return 2 * x * g\nx = torch.tensor([1.5], requires_grad=True)\n(g,) = torch.autograd.grad((Sq.apply(x) ** 3).sum(), x, create_graph=True)\ng.sum().backward()\n"),
    ("gradcheck-wrong", "09#gradcheck", "import torch\nclass Sin(torch.autograd.Function):\n    @staticmethod\n    def forward(x):\n        return x.sin()\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        ctx.save_for_backward(inputs[0])\n    @staticmethod\n    def backward(ctx, g):\n        (x,) = ctx.saved_tensors\n        return -x.cos() * g\ntorch.manual_seed(0)\ntorch.autograd.gradcheck(Sin.apply, (torch.randn(5, dtype=torch.float64, requires_grad=True),))\n"),
    ("checkpoint-no-grad-inputs", "09#checkpoint-util", "import torch\nfrom torch.utils.checkpoint import checkpoint\nlayer = torch.nn.Linear(3, 3)\nout = checkpoint(layer, torch.randn(2, 3), use_reentrant=True)\nprint(out.requires_grad)\n"),
    ("compiled-prefix", "10#compile-state-dict", "import torch, torch.nn as nn\nnet = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 1))\nopt_net = torch.compile(net, backend='eager')\nrestored = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 1))\nrestored.load_state_dict(opt_net.state_dict())\n"),
    ("whole-model-default-load", "10#weights-only-failed", "import pathlib, torch\npathlib.Path('blocks.py').write_text('from torch import nn\\nclass Head(nn.Module):\\n    def __init__(self):\\n        super().__init__()\\n        self.fc = nn.Linear(5, 2)\\n')\nfrom blocks import Head\ntorch.save(Head(), 'head.pt')\ntorch.load('head.pt')\n"),
    ("module-renamed", "10#class-moved", "import importlib, os, pathlib, sys, torch\npathlib.Path('layers.py').write_text('from torch import nn\\nclass Gate(nn.Module):\\n    def forward(self, x):\\n        return x.sigmoid()\\n')\nimport layers\ntorch.save(layers.Gate(), 'gate.pt')\ndel sys.modules['layers'], layers\nos.rename('layers.py', 'gates_v2.py')\nimportlib.invalidate_caches()\ntorch.load('gate.pt', weights_only=False)\n"),
    ("class-in-other-main", "10#class-moved", "import pathlib, subprocess, sys, torch\npathlib.Path('fit.py').write_text('import torch\\nclass Scaler(torch.nn.Module):\\n    pass\\ntorch.save(Scaler(), \"scaler.pt\")\\n')\nsubprocess.run([sys.executable, 'fit.py'], check=True)\ntorch.load('scaler.pt', weights_only=False)\n"),
    ("spawn-no-main-guard", "08#spawn", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(torch.arange(12.), batch_size=3, num_workers=2, multiprocessing_context='spawn')\nfor batch in loader:\n    print(batch)\n"),
    ("slow-worker-timeout", "08#hang", "import time, torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Slow(Dataset):\n    def __len__(self):\n        return 8\n    def __getitem__(self, i):\n        time.sleep(4)\n        return i\nif __name__ == '__main__':\n    next(iter(DataLoader(Slow(), num_workers=1, timeout=1)))\n"),
    ("dirty-saved-output", "09#mark-dirty", "import torch\nclass ScaleInplace(torch.autograd.Function):\n    @staticmethod\n    def forward(x, k):\n        return x.mul_(k)\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        ctx.save_for_backward(output)\n        ctx.k = inputs[1]\n    @staticmethod\n    def backward(ctx, g):\n        return g * ctx.k, None\nh = torch.randn(2, 3, requires_grad=True).sigmoid()\nScaleInplace.apply(h, 0.5)\n"),
    ("dirty-leaf", "09#mark-dirty", "import torch\nclass Neg_(torch.autograd.Function):\n    @staticmethod\n    def forward(x):\n        return x.neg_()\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        ctx.mark_dirty(inputs[0])\n    @staticmethod\n    def backward(ctx, g):\n        return -g\nbias = torch.zeros(4, 2, requires_grad=True)\nNeg_.apply(bias)\n"),
    ("function-numpy-export", "09#custom-op", "import torch\nclass Clip(torch.autograd.Function):\n    @staticmethod\n    def forward(x):\n        return torch.tensor(x.detach().numpy().clip(-1, 1))\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        ctx.save_for_backward(inputs[0])\n    @staticmethod\n    def backward(ctx, g):\n        return g * (ctx.saved_tensors[0].abs() < 1)\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return Clip.apply(x) + 1\ntorch.export.export(Net(), (torch.randn(2, 5),))\n"),
    ("trace-max-branch", "10#jit-trace", "import torch\ndef shift(v):\n    if v.max() < 1:\n        return v + 1\n    return v\ntorch.jit.trace(shift, torch.zeros(4, 4))\n"),
    ("script-function-deprecated", "10#jit-script", "import warnings\nwarnings.simplefilter('default')\nimport torch\n@torch.jit.script\ndef scale(x: torch.Tensor, k: float):\n    return x * k\nprint(scale(torch.ones(2), 3.0))\n"),
    ("script-varargs", "10#jit-script", "import torch\ndef total(*xs):\n    return sum(xs)\ntorch.jit.script(total)\n"),
    ("export-seq-guard", "10#torch-export", "import torch\nclass Pool(torch.nn.Module):\n    def forward(self, feats):\n        return feats.mean(dim=1)\nep = torch.export.export(Pool(), (torch.randn(2, 6, 8),))\nep.module()(torch.randn(2, 9, 8))\n"),
    ("export-dim-view", "10#export-dynamic", "import torch\nfrom torch.export import Dim\nclass Pairs(torch.nn.Module):\n    def forward(self, tokens):\n        return tokens.view(8, 2)\ntorch.export.export(Pairs(), (torch.randn(8, 2),), dynamic_shapes={'tokens': {0: Dim('seq')}})\n"),
    ("onnx-legacy-linear", "10#onnx-lost", "import warnings, torch\nwarnings.filterwarnings('ignore', category=FutureWarning)\ntorch.onnx.export(torch.nn.Linear(3, 1), (torch.randn(2, 3),), 'lin.onnx', dynamo=False)\n"),
    ("onnx-custom-gelu", "10#onnx-lost", "import logging, warnings, torch\nlogging.getLogger('torch.onnx').setLevel(logging.ERROR)\nwarnings.filterwarnings('ignore', category=FutureWarning)\n@torch.library.custom_op('lab::gelu_tanh', mutates_args=())\ndef gelu_tanh(x: torch.Tensor) -> torch.Tensor:\n    return torch.nn.functional.gelu(x, approximate='tanh')\n@gelu_tanh.register_fake\ndef _(x):\n    return torch.empty_like(x)\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return gelu_tanh(x) * 3\ntorch.onnx.export(M().eval(), (torch.randn(2, 4),), 'm.onnx')\n"),
    ("gradcheck-float32", "09#gradcheck", "import torch\ntorch.manual_seed(1)\nprint(torch.autograd.gradcheck(torch.sigmoid, (torch.randn(4, requires_grad=True),), eps=1e-2, atol=1e-1))\n"),
    ("spawn-local-dataset", "08#pickle", "import torch\nfrom torch.utils.data import DataLoader, Dataset\ndef build():\n    class Squares(Dataset):\n        def __len__(self):\n            return 4\n        def __getitem__(self, i):\n            return i * i\n    return Squares()\nif __name__ == '__main__':\n    next(iter(DataLoader(build(), num_workers=1, multiprocessing_context='spawn')))\n"),
    ("inductor-no-cxx", "10#inductor", "import os\nos.environ['PATH'] = '/nonexistent'\nos.environ.pop('CXX', None)\nos.environ['TORCHINDUCTOR_CACHE_DIR'] = 'inductor_cache'\nimport torch\nmodel = torch.compile(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()))\nmodel(torch.randn(2, 4))\n"),
    ("expand-index-put", "01#expand", "import torch\nrow = torch.zeros(1, 6).expand(4, 6)\nrow[[1, 3]] = 2.0\nprint(row[0])\n"),
    ("expand-masked-fill", "01#expand", "import torch\nm = torch.ones(3).expand(5, 3)\nm.masked_fill_(m > 0, 0.0)\n"),
    ("split-base-modified", "03#multi-output-view", "import torch\nw = torch.randn(6, requires_grad=True)\nz = w * 2\nfirst, second, third = z.split(2)\nz.add_(1)\nprint(first.exp())\n"),
    ("unbind-buffer-fill", "03#multi-output-view", "import torch\nlin = torch.nn.Linear(3, 2)\nout = torch.zeros(4, 2)\nfor row in out:\n    row.copy_(lin(torch.randn(3)))\n"),
    ("nograd-view-base-modified", "04#no-grad-views", "import torch\nemb = torch.randn(5, 3, requires_grad=True)\nx = emb * 1\nwith torch.no_grad():\n    head = x[0]\nx.mul_(0.5)\nout = head.sum()\n"),
    ("expand-wrong-dim", "01#expand", "import torch\nbias = torch.zeros(10)\nbias.expand(4, 8)\n"),
    ("inplace-grows", "01#expand", "import torch\nacc = torch.zeros(5)\nacc += torch.ones(3, 5)\n"),
    ("hook-frozen", "02#hooks", "import torch\nemb = torch.nn.Embedding(4, 3)\nemb.weight.requires_grad_(False)\nemb.weight.register_hook(print)\n"),
    ("optimizer-nothing", "05#plain-list", "import torch, torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = [nn.Linear(4, 4), nn.Linear(4, 2)]\nopt = torch.optim.Adam(Net().parameters())\n"),
    ("conv-input-double", "05#to-leaves-behind", "import numpy as np, torch\nconv = torch.nn.Conv1d(2, 4, 3)\nconv(torch.from_numpy(np.zeros((1, 2, 9))))\n"),
    ("optimizer-groups", "06#optimizer-state", "import torch, torch.nn as nn\nold = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 1))\nnew = nn.Sequential(nn.Linear(3, 3))\nsd = torch.optim.Adam(old.parameters()).state_dict()\ntorch.optim.Adam(new.parameters()).load_state_dict(sd)\n"),
    ("dataparallel-prefix", "06#module-prefix", "import torch.nn as nn\nnet = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU())\nwrapped = nn.DataParallel(net)\nnn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU()).load_state_dict(wrapped.state_dict())\n"),
    ("save-a-float", "09#save-for-backward", "import torch\nclass Mul(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, k):\n        ctx.save_for_backward(x, k)\n        return x * k\n    @staticmethod\n    def backward(ctx, g):\n        return g, None\nMul.apply(torch.ones(3, requires_grad=True), 0.5)\n"),
    ("legacy-instance", "09#old-style", "import torch\nclass Clamp(torch.autograd.Function):\n    def forward(self, x):\n        return x.clamp(0, 1)\n    def backward(self, g):\n        return g\nClamp()(torch.randn(4))\n"),
    ("script-builtin", "10#jit-script", "import torch\n@torch.jit.script\ndef parse(x: torch.Tensor):\n    return eval('x')\n"),
    ("onnx-legacy-op", "10#onnx-lost", "import logging, warnings, torch\nwarnings.filterwarnings('ignore')\nclass Spec(torch.nn.Module):\n    def forward(self, x):\n        return torch.fft.rfft(x).abs()\ntorch.onnx.export(Spec(), (torch.randn(8),), 'spec.onnx', dynamo=False)\n"),
    ("compile-branch", "10#compile", "import torch\n@torch.compile(fullgraph=True, backend='eager')\ndef clip(v):\n    if v.max() > 2:\n        return v / v.max()\n    return v\nclip(torch.arange(5.0))\n"),
    ("recompile-fail", "10#recompile", "import logging, torch\nlogging.getLogger('torch._dynamo').setLevel(logging.ERROR)\ntorch._dynamo.config.recompile_limit = 1\nscale = torch.compile(lambda t, s: t * s, fullgraph=True, backend='eager', dynamic=False)\nfor s in (2, 3, 4):\n    scale(torch.ones(2), s)\n"),
    ("export-eval", "A#extra-runs", "import torch\nnet = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.2))\nprog = torch.export.export(net, (torch.randn(2, 3),))\nprog.module().eval()\n"),
    ("trace-dict-out", "A#extra-runs", "import torch\nclass Heads(torch.nn.Module):\n    def forward(self, x):\n        return {'cls': x.sum(1), 'box': x}\ntorch.jit.trace(Heads(), torch.randn(2, 4))\n"),
    ("truncated-ckpt", "A#corrupt-file", "import torch\ntorch.save({'model': torch.nn.Linear(8, 8).state_dict()}, 'full.pt')\nblob = open('full.pt', 'rb').read()\nopen('part.pt', 'wb').write(blob[:300])\ntorch.load('part.pt')\n"),
    ("lfs-pointer", "A#corrupt-file", "import torch\nopen('weights.pth', 'w').write('version https://git-lfs.github.com/spec/v1\\noid sha256:4d7a\\nsize 102400\\n')\ntorch.load('weights.pth')\n"),
    ("lfs-pointer-unsafe", "A#corrupt-file", "import torch\nopen('weights.pth', 'w').write('version https://git-lfs.github.com/spec/v1\\noid sha256:4d7a\\nsize 102400\\n')\ntorch.load('weights.pth', weights_only=False)\n"),
    ("torchscript-via-load", "10#jit-save", "import warnings, torch\nwarnings.simplefilter('ignore')\ntorch.jit.save(torch.jit.script(torch.nn.ReLU()), 'relu.pt')\ntorch.load('relu.pt')\n"),
    ("gpu-checkpoint", "A#map-location", "import torch\ntorch.serialization.register_package(0, lambda o: 'cuda:1', lambda o, loc: None)\ntorch.save(torch.nn.Linear(2, 2).state_dict(), 'gpu_ckpt.pt')\ntorch.load('gpu_ckpt.pt', weights_only=True)\n"),
    ("collate-images", "A#collate-stack", "import torch\nfrom torch.utils.data import DataLoader\nimages = [torch.zeros(3, 32, 32), torch.zeros(3, 28, 28)]\nfor batch in DataLoader(images, batch_size=2):\n    pass\n"),
    ("worker-sigbus", "A#shm-bus-error", "import os, signal, torch\nfrom torch.utils.data import DataLoader, Dataset\nclass Boom(Dataset):\n    def __len__(self):\n        return 8\n    def __getitem__(self, i):\n        os.kill(os.getpid(), signal.SIGBUS)\nif __name__ == '__main__':\n    for _ in DataLoader(Boom(), num_workers=2):\n        pass\n"),
    ("grad-wrong-shape", "09#backward-returns", "import torch\nclass Sq(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n        return x ** 2\n    @staticmethod\n    def backward(ctx, g):\n        return g.sum(0)\nx = torch.ones(3, 2, requires_grad=True)\nSq.apply(x).sum().backward()\n"),
    ("export-item-branch", "10#export-data-dependent", "import torch\nclass Gate(torch.nn.Module):\n    def forward(self, x):\n        n = (x > 0).sum().item()\n        return x[:1] if n == 2 else x\ntorch.export.export(Gate(), (torch.randn(4),))\n"),
    ("ort-fixed-batch", "10#onnx", "import logging, warnings\nwarnings.filterwarnings('ignore')\nimport numpy as np, onnxruntime as ort, torch\nlogging.getLogger('torch.onnx').setLevel(logging.ERROR)\ntorch.onnx.export(torch.nn.Linear(6, 2), (torch.randn(3, 6),), 'lin.onnx', dynamo=False)\nsess = ort.InferenceSession('lin.onnx')\nsess.run(None, {sess.get_inputs()[0].name: np.ones((7, 6), np.float32)})\n"),
    ("trace-train-dropout", "A#extra-runs", "import warnings\nwarnings.simplefilter('always')\nimport torch\ndef noisy(x):\n    return torch.nn.functional.dropout(x, 0.2, training=True) * 3\ntorch.jit.trace(noisy, torch.ones(6))\n"),
    ("export-no-fake", "09#custom-op", "import torch\n@torch.library.custom_op('lab::scale2', mutates_args=())\ndef scale2(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return scale2(x).sum()\ntorch.export.export(Net(), (torch.randn(5),))\n"),
    ("onnx-training-mode", "A#extra-runs", "import logging, warnings\nwarnings.simplefilter('default')\nwarnings.filterwarnings('ignore', category=FutureWarning)\nimport torch\nlogging.getLogger('torch.onnx').setLevel(logging.ERROR)\nnet = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))\ntorch.onnx.export(net, (torch.randn(4, 3),), 'bn.onnx', verbose=False)\n"),
    # chapters 09-10, December review fixes (h41)
    ("renamed-class", "10#class-moved", "import pathlib, sys, torch\npathlib.Path('models.py').write_text('import torch.nn as nn\\nclass Encoder(nn.Linear): pass\\n')\nimport models\ntorch.save(models.Encoder(2, 2), 'enc.pt')\ndel sys.modules['models']\npathlib.Path('models.py').write_text('import torch.nn as nn\\nclass TextEncoder(nn.Linear): pass\\n')\ntorch.load('enc.pt', weights_only=False)\n"),
    ("function-vmap", "09#old-style", "import torch\nclass Clamp(torch.autograd.Function):\n    @staticmethod\n    def forward(x):\n        return x.clamp(0, 1)\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        pass\n    @staticmethod\n    def backward(ctx, g):\n        return g\ntorch.func.vmap(Clamp.apply)(torch.randn(4, 3))\n"),
    ("function-jvp", "09#old-style", "import torch\nclass Clamp(torch.autograd.Function):\n    @staticmethod\n    def forward(x):\n        return x.clamp(0, 1)\n    @staticmethod\n    def setup_context(ctx, inputs, output):\n        pass\n    @staticmethod\n    def backward(ctx, g):\n        return g\nx = torch.randn(3)\ntorch.func.jvp(Clamp.apply, (x,), (torch.ones(3),))\n"),
    # chapter 10 and appendix A, second December review (10-A M6)
    ("export-str-guard", "10#torch-export", "import torch\nclass Pool(torch.nn.Module):\n    def forward(self, x, how: str):\n        return x.amax(0) if how == 'max' else x.mean(0)\nep = torch.export.export(Pool(), (torch.ones(4, 2), 'max'))\nep.module()(torch.ones(4, 2), 'mean')\n"),
    ("export-dim-min-guard", "10#torch-export", "import torch\nfrom torch.export import Dim\nclass Head(torch.nn.Module):\n    def forward(self, tokens):\n        return tokens[:2] * 3\nep = torch.export.export(Head(), (torch.ones(6, 5),), dynamic_shapes={'tokens': {0: Dim('seq', min=4)}})\nep.module()(torch.ones(2, 5))\n"),
    ("export-strict-branch", "10#compile", "import torch\nclass Clip(torch.nn.Module):\n    def forward(self, v):\n        if v.abs().max() > 5:\n            return v / 5\n        return v\ntorch.export.export(Clip(), (torch.arange(4.0),), strict=True)\n"),
    ("plain-into-compiled", "10#compile-state-dict", "import torch, torch.nn as nn\nnet = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))\ntorch.save(net.state_dict(), 'plain.pt')\nfast = torch.compile(nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1)), backend='eager')\nfast.load_state_dict(torch.load('plain.pt'))\n"),
    ("explain-reasons", "10#compile", "import torch, torch._dynamo\ndef norm(v):\n    if v.mean() < 0:\n        v = v.abs()\n    return v / 2\nfor r in torch._dynamo.explain(norm)(torch.ones(4)).break_reasons:\n    print(r.reason.splitlines()[0])\ntorch.compile(norm, fullgraph=True, backend='eager')(torch.ones(4))\n"),
]


def _forked(d: str) -> None:
    """In the child: run snippet.py as __main__, its output into out.txt, exit as python would."""
    import os
    import runpy
    import traceback

    os.chdir(d)
    fd = os.open("out.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.argv = ["snippet.py"]
    sys.path[0] = d
    code = 0
    try:
        runpy.run_path("snippet.py", run_name="__main__")
    except BaseException as exc:  # noqa: BLE001 - printed as the interpreter would
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "snippet.py":
            tb = tb.tb_next  # the harness's frames (this function, runpy)
        sys.stdout.flush()
        traceback.print_exception(type(exc), exc, tb)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def run(code: str) -> str:
    import os

    with tempfile.TemporaryDirectory(prefix="tc-variant-") as d:
        (Path(d) / "snippet.py").write_text(code, encoding="utf-8")
        if "spawn" in code or "num_workers" in code:
            r = subprocess.run([sys.executable, "snippet.py"], cwd=d, capture_output=True, text=True, timeout=300)
            out = r.stdout + r.stderr
        else:
            pid = os.fork()
            if pid == 0:
                _forked(d)
            os.waitpid(pid, 0)
            out = (Path(d) / "out.txt").read_text(encoding="utf-8")
        return out.replace(d + "/", "").replace(d, ".")


def main() -> None:
    import numpy  # noqa: F401 - imported once here, before the forks
    import torch  # noqa: F401

    only = set(sys.argv[1:])
    path = HERE / "lookup_variants.json"
    old = {c["name"]: c for c in json.loads(path.read_text(encoding="utf-8"))} if path.exists() else {}
    out = []
    for name, link, code in CASES:
        if only and name not in only and name in old and old[name]["code"] == code:
            out.append(old[name])
            continue
        output = run(code)
        print(f"--- {name} → {link}\n{output.strip().splitlines()[-1] if output.strip() else '(no output)'}", flush=True)
        out.append({"name": name, "link": link, "code": code, "output": output})
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
