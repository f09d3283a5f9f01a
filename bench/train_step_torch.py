#!/usr/bin/python3
"""
bench/train_step_torch.py: the Relational Transformer of src/core/model.h in
PyTorch (float32, dense [B,S,S] masks: PyTorch 1.13 has no block-sparse or
fused attention), one full training step = forward, backward, global-norm
clipping, Muon (2-D weights) + AdamW (the rest) written out by hand.  The
reference for the C trainer's bench/train_step; same presets (src/core/model.h).

    /usr/bin/python3 bench/train_step_torch.py [preset ...] [--B n] [--steps n] [--threads n]

presets: tiny small base (default: small base).  Prints per preset
    torch preset=<p> B=.. S=.. D=.. L=.. H=.. threads=..: X ms/step, Y tokens/s
and a machine-readable line
    RESULT impl=torch preset=<p> B=.. S=.. ms_per_step=X tokens_per_s=Y
(tokens = B*S positions, padding included, the same count the C bench uses).
base at B=32 needs ~20 GB for the saved [B,H,S,S] probabilities of 18
attention sublayers; --B lowers it (tokens/s is then per the smaller batch).
The batch: rows of 3-8 cells (anchor row, a parent, children pointing to
the anchor), 0-25% padding; its structure does not change the dense cost.
"""
import argparse
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as Fn

PRESETS = {  # D, H, L, S, B  (src/core/model.h), d_text 256
    "tiny": (64, 4, 2, 128, 16),
    "small": (128, 4, 4, 256, 32),
    "base": (256, 8, 6, 1024, 32),
}
DT = 256
ST_ID, ST_NUM, ST_TS, ST_BOOL, ST_CAT, ST_TEXT = 0, 1, 2, 3, 4, 5


def d_ff(D):
    return ((8 * D + 2) // 3 + 255) // 256 * 256


def param_specs(D, H, L, F, Dt):
    sp = [("enc.col.w", (D, Dt)), ("enc.col.b", (D,)), ("enc.id_emb", (D,)),
          ("enc.null_emb", (D,)), ("enc.mask_emb", (D,)), ("enc.num.w", (D, 1)),
          ("enc.num.b", (D,)), ("enc.ts.w", (D, 15)), ("enc.ts.b", (D,)),
          ("enc.bool_emb", (2, D)), ("enc.cat.w", (D, Dt)), ("enc.cat.b", (D,)),
          ("enc.text.w", (D, Dt)), ("enc.text.b", (D,)), ("enc.norm.g", (D,))]
    for l in range(L):
        for s in ("out", "in", "col"):
            p = f"layer{l}.{s}."
            sp += [(p + "norm.g", (D,)), (p + "wq", (D, D)), (p + "wk", (D, D)),
                   (p + "wv", (D, D)), (p + "wgate", (D, D)), (p + "wo", (D, D)),
                   (p + "tau", (H,))]
        p = f"layer{l}.ffn."
        sp += [(p + "norm.g", (D,)), (p + "wg", (F, D)), (p + "wu", (F, D)), (p + "w2", (D, F))]
    sp += [("final.norm.g", (D,)), ("head.null.w", (1, D)), ("head.num.w", (1, D)),
           ("head.bool.w", (1, D)), ("head.ts.w", (15, D)), ("head.cat.w", (D, D)),
           ("head.null.b", (1,)), ("head.num.b", (1,)), ("head.bool.b", (1,)),
           ("head.ts.b", (15,)), ("head.cat.b", (D,))]
    return sp


def make_batch(rng, B, S, Dt, ncols=12, ncat=9):
    """Synthetic batch: anchor row, parent row, children -> anchor; numerical target."""
    st = np.zeros((B, S), np.int64)
    col = np.zeros((B, S), np.int64)
    row = np.zeros((B, S), np.int64)
    pad = np.zeros((B, S), bool)
    tgt = np.zeros((B, S), bool)
    R = S
    adj = np.zeros((B, R, R), bool)
    types = [ST_ID, ST_NUM, ST_NUM, ST_BOOL, ST_CAT, ST_ID, ST_NUM, ST_TS, ST_ID, ST_ID, ST_NUM, ST_TEXT]
    tables = [range(0, 5), range(5, 8), range(8, 12)]
    for b in range(B):
        used = S - int(rng.integers(0, S // 4 + 1))
        pos, r = 0, 0
        while pos < used:
            t = 0 if r == 0 else 1 if r == 1 else 2
            if r == 1:
                adj[b, 0, 1] = True
            elif r > 1:
                adj[b, r, 0] = True
            for c in tables[t]:
                if pos >= used:
                    break
                st[b, pos], col[b, pos], row[b, pos] = types[c], c, r
                if r == 0 and c == 2:
                    tgt[b, pos] = True
                pos += 1
            r += 1
        pad[b, used:] = True
    n = B * S
    bt = dict(st=st, col=col, row=row, pad=pad, tgt=tgt, adj=adj,
              isnull=rng.random((B, S)) < 0.1, num=rng.normal(size=(B, S)).astype(np.float32),
              ts=rng.normal(size=(B, S, 15)).astype(np.float32),
              boolv=rng.integers(0, 2, (B, S)), cat=rng.integers(0, ncat, (B, S)),
              text=rng.integers(0, max(1, n // 8), (B, S)))
    bt["isnull"] &= ~bt["tgt"]
    tabs = dict(col=rng.normal(size=(ncols, Dt)).astype(np.float32) / math.sqrt(Dt),
                cat=rng.normal(size=(ncat, Dt)).astype(np.float32) / math.sqrt(Dt),
                text=rng.normal(size=(max(1, n // 8), Dt)).astype(np.float32) / math.sqrt(Dt))
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in bt.items()}, \
        {k: torch.from_numpy(v) for k, v in tabs.items()}


def rms(x, g):
    return (1.0 + g) * x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)


def masks(bt):
    """[B,1,S,S] bool masks of attention.h (rule AND not padding, OR diagonal)."""
    col, row, pad, adj = bt["col"], bt["row"], bt["pad"], bt["adj"]
    B, S = col.shape
    bidx = torch.arange(B)[:, None, None]
    ri, rj = row[:, :, None], row[:, None, :]
    valid = (~pad)[:, :, None] & (~pad)[:, None, :]
    eye = torch.eye(S, dtype=torch.bool)[None]
    m = {"col": col[:, :, None] == col[:, None, :],
         "out": (ri == rj) | adj[bidx, ri, rj],
         "in": adj[bidx, rj, ri]}
    return {k: ((v & valid) | eye)[:, None] for k, v in m.items()}


def loss_fn(P, bt, tabs, D, H, L):
    B, S = bt["col"].shape
    N, dh = B * S, D // H
    st = bt["st"].view(N)
    colproj = tabs["col"] @ P["enc.col.w"].T + P["enc.col.b"]
    catproj = tabs["cat"] @ P["enc.cat.w"].T + P["enc.cat.b"]
    textproj = tabs["text"] @ P["enc.text.w"].T + P["enc.text.b"]
    vals = torch.zeros(N, D)
    vals = torch.where((st == ST_ID)[:, None], P["enc.id_emb"].expand(N, D), vals)
    vals = torch.where((st == ST_NUM)[:, None],
                       P["enc.num.w"][:, 0] * bt["num"].view(N, 1) + P["enc.num.b"], vals)
    vals = torch.where((st == ST_TS)[:, None], bt["ts"].view(N, 15) @ P["enc.ts.w"].T + P["enc.ts.b"], vals)
    vals = torch.where((st == ST_BOOL)[:, None], P["enc.bool_emb"][bt["boolv"].view(N)], vals)
    vals = torch.where((st == ST_CAT)[:, None], catproj[bt["cat"].view(N)], vals)
    vals = torch.where((st == ST_TEXT)[:, None], textproj[bt["text"].view(N)], vals)
    vals = torch.where(bt["isnull"].view(N, 1), P["enc.null_emb"].expand(N, D), vals)
    vals = torch.where(bt["tgt"].view(N, 1), P["enc.mask_emb"].expand(N, D), vals)
    x = rms(colproj[bt["col"].view(N)] + vals, P["enc.norm.g"])
    M = masks(bt)
    for l in range(L):
        for s in ("out", "in", "col"):
            p = f"layer{l}.{s}."
            xn = rms(x, P[p + "norm.g"])
            W = torch.cat([P[p + "wq"], P[p + "wk"], P[p + "wv"], P[p + "wgate"]])  # one GEMM
            q, k, v, gp = (xn @ W.T).split(D, dim=1)
            q = q.view(B, S, H, dh).transpose(1, 2)
            k = k.view(B, S, H, dh).transpose(1, 2)
            v = v.reshape(B, S, H, dh).transpose(1, 2)
            q = q / torch.clamp(q.norm(dim=-1, keepdim=True), min=1e-6) * (P[p + "tau"].view(1, H, 1, 1) / math.sqrt(dh))
            k = k / torch.clamp(k.norm(dim=-1, keepdim=True), min=1e-6)
            att = (q @ k.transpose(-1, -2)).masked_fill(~M[s], -1e9)
            a = (torch.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(N, D)
            x = x + torch.sigmoid(gp) * (a @ P[p + "wo"].T)
        p = f"layer{l}.ffn."
        xn = rms(x, P[p + "norm.g"])
        g, u = (xn @ torch.cat([P[p + "wg"], P[p + "wu"]]).T).chunk(2, dim=1)
        x = x + (Fn.silu(g) * u) @ P[p + "w2"].T
    tidx = bt["tgt"].view(N).nonzero()[:, 0]
    hf = rms(x[tidx], P["final.norm.g"])
    Z = hf @ torch.cat([P["head.null.w"], P["head.num.w"], P["head.bool.w"], P["head.ts.w"],
                        P["head.cat.w"]]).T + \
        torch.cat([P["head.null.b"], P["head.num.b"], P["head.bool.b"], P["head.ts.b"], P["head.cat.b"]])
    tnull = bt["isnull"].view(N)[tidx].float()
    null_loss = Fn.binary_cross_entropy_with_logits(Z[:, 0], tnull, reduction="none")
    type_loss = Fn.huber_loss(Z[:, 1], bt["num"].view(N)[tidx], reduction="none", delta=1.0)
    return (null_loss + (1 - tnull) * type_loss).mean()


class Optim:
    """Muon (2-D weights, both dims >= 2, not enc.bool_emb) + AdamW, model.h."""

    def __init__(self, P, lr=3e-3, b1=0.9, b2=0.95, eps=1e-8, wd=0.1, mu=0.95, clip=1.0):
        self.P, self.lr, self.b1, self.b2, self.eps, self.wd, self.mu, self.clip = P, lr, b1, b2, eps, wd, mu, clip
        self.t = 0
        self.state = {n: (torch.zeros_like(p), torch.zeros_like(p)) for n, p in P.items()}

    @torch.no_grad()
    def step(self):
        self.t += 1
        gnorm = math.sqrt(sum(float((p.grad.double() ** 2).sum()) for p in self.P.values()))
        gs = min(1.0, self.clip / (gnorm + 1e-6))
        for n, p in self.P.items():
            g = p.grad * gs
            m, v = self.state[n]
            wd = self.wd if p.dim() == 2 and n != "enc.bool_emb" else 0.0
            if p.dim() == 2 and min(p.shape) >= 2 and n != "enc.bool_emb":
                m.mul_(self.mu).add_(g)
                X = g + self.mu * m
                X = X / (X.norm() + 1e-7)
                tr = X.shape[0] > X.shape[1]
                if tr:
                    X = X.T
                for _ in range(5):
                    A = X @ X.T
                    X = 3.4445 * X + (-4.7750 * A + 2.0315 * A @ A) @ X
                if tr:
                    X = X.T
                p.mul_(1 - self.lr * wd).add_(X, alpha=-self.lr * 0.2 * math.sqrt(max(p.shape)))
            else:
                m.mul_(self.b1).add_(g, alpha=1 - self.b1)
                v.mul_(self.b2).addcmul_(g, g, value=1 - self.b2)
                bc1, bc2 = 1 - self.b1 ** self.t, 1 - self.b2 ** self.t
                upd = (m / bc1) / ((v / bc2).sqrt() + self.eps) + wd * p
                p.add_(upd, alpha=-self.lr)
            p.grad = None
        return gnorm


def run(preset, B, steps, threads):
    D, H, L, S, B0 = PRESETS[preset]
    B = B or B0
    F = d_ff(D)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    P = {}
    for n, shape in param_specs(D, H, L, F, DT):
        if n.endswith("norm.g") or n.endswith(".b"):
            t = torch.zeros(shape)
        elif n.endswith(".tau"):
            t = torch.full(shape, math.sqrt(D // H))
        else:
            t = torch.randn(shape) / math.sqrt(shape[-1])
        P[n] = t.requires_grad_(True)
    opt = Optim(P)
    bt, tabs = make_batch(rng, B, S, DT)
    times, cpus = [], []
    for i in range(steps + 1):   # the first step warms up the allocator
        t0, c0 = time.perf_counter(), time.process_time()
        loss = loss_fn(P, bt, tabs, D, H, L)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    med = sorted(times[1:])[len(times[1:]) // 2]
    cpu = sorted(cpus[1:])[len(cpus[1:]) // 2]
    tok = B * S / med
    # CPU seconds of all threads per step: on a machine shared with other
    # work, wall time counts waits for a core and this does not
    print(f"torch preset={preset} B={B} S={S} D={D} L={L} H={H} threads={threads}: "
          f"{med * 1e3:.1f} ms/step (median of {steps}), {tok:.0f} tokens/s, "
          f"{cpu:.2f} CPU-s/step, loss {loss.item():.4f}")
    print(f"RESULT impl=torch preset={preset} B={B} S={S} ms_per_step={med * 1e3:.1f} "
          f"tokens_per_s={tok:.0f} cpu_s_per_step={cpu:.3f}")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("presets", nargs="*", default=["small", "base"])
    ap.add_argument("--B", type=int, default=0, help="batch size (default: the preset's)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} default threads, "
          f"MKL-DNN {torch.backends.mkldnn.is_available()}")
    for p in a.presets:
        run(p, a.B, a.steps, a.threads)


if __name__ == "__main__":
    main()
