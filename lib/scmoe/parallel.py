"""Expert parallelism on ``torch.distributed``: sharded experts, All-to-All dispatch and
combine.

Each of W processes holds E/W experts and its own tokens. A layer routes its tokens,
packs them into (E, C, D) capacity buffers, and one ``all_to_all_single`` sends the
block of experts owned by rank j to rank j (**dispatch**); each rank runs its local
experts on what it received from everyone and a second All-to-All sends the outputs back
(**combine**). The backend is NCCL when there is one GPU per process, gloo on CPU
otherwise.

:func:`launch` starts W processes (spawn), sets up the process group on a free 127.0.0.1
port with a timeout, runs a worker function from this module and returns what each rank
returned; a hang or a crash raises instead of blocking. :class:`Link` optionally
emulates a slower interconnect on top of the real transport: a transfer of b bytes
launched at t₀ is complete at max(real completion, t₀ + b / bandwidth), which is exactly
a slower link as seen by the compute stream.
"""

from __future__ import annotations

import datetime
import os
import queue
import socket
import statistics
import time
import traceback
from dataclasses import dataclass

import torch
import torch.distributed as dist

from lib.common import check_int, check_positive, check_tensor

from .moe import capacity, combine, dispatch, expert_ffn, route


# --- process launch -------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pick_backend(world_size: int) -> str:
    """``nccl`` when CUDA has at least ``world_size`` GPUs, else ``gloo``."""
    world_size = check_int("world_size", world_size, 1)
    if (
        torch.cuda.is_available()
        and torch.cuda.device_count() >= world_size
        and dist.is_nccl_available()
    ):
        return "nccl"
    return "gloo"


def _entry(fn, rank, world_size, port, backend, timeout_s, results, args):
    """Body of a spawned rank: quiet stdio, one thread, process group, run ``fn``,
    report, tear down."""
    devnull = os.open(
        os.devnull, os.O_WRONLY
    )  # gloo/NCCL chatter must not reach the notebook
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    torch.set_num_threads(1)
    dev = torch.device("cpu")
    if backend == "nccl":
        dev = torch.device("cuda", rank)
        torch.cuda.set_device(dev)
    try:
        dist.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{port}",
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout_s),
        )
        try:
            results.put((rank, True, fn(rank, world_size, dev, *args)))
        finally:
            dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - everything goes back to the parent as text
        results.put((rank, False, traceback.format_exc()))


def launch(
    fn,
    world_size: int = 2,
    args: tuple = (),
    timeout_s: float = 120.0,
    backend: str | None = None,
) -> list:
    """Run ``fn(rank, world_size, device, *args)`` in ``world_size`` spawned processes;
    return the per-rank return values (picklable), in rank order. Raises
    ``RuntimeError`` with the failing rank's traceback, and ``TimeoutError`` if the
    ranks have not all answered after ``timeout_s``."""
    if not callable(fn):
        raise TypeError(
            f"fn: expected a module-level function, got {type(fn).__name__}"
        )
    world_size = check_int("world_size", world_size, 1)
    timeout_s = check_positive("timeout_s", timeout_s)
    backend = backend or pick_backend(world_size)
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend: expected 'gloo' or 'nccl', got {backend!r}")
    ctx = torch.multiprocessing.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(
            target=_entry,
            args=(fn, r, world_size, port, backend, timeout_s, results, args),
            daemon=True,
        )
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    out, errors, deadline, clean = {}, [], time.monotonic() + timeout_s, False
    try:
        while len(out) + len(errors) < world_size:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(
                    f"launch: the {world_size} ranks did not finish within "
                    f"{timeout_s:g} s"
                )
            try:
                rank, ok, payload = results.get(timeout=min(left, 0.5))
            except queue.Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if dead and results.empty():
                    raise RuntimeError(
                        f"launch: a rank exited with code {dead[0]} before reporting"
                    ) from None
                continue
            (
                out.__setitem__(rank, payload)
                if ok
                else errors.append(f"rank {rank}:\n{payload}")
            )
        clean = not errors
    finally:
        stop = time.monotonic() + (
            10 if clean else 0
        )  # a failed or hung run is not waited for
        for p in procs:
            p.join(timeout=max(stop - time.monotonic(), 0.1))
            if p.is_alive():
                p.terminate()
                p.join()
    if errors:
        raise RuntimeError("launch: a rank failed\n" + errors[0])
    return [out[r] for r in range(world_size)]


# --- All-to-All with an optional emulated link ----------------------------------------


@dataclass(frozen=True)
class Link:
    """The interconnect: the real transport, optionally slowed to ``bandwidth`` bytes/s
    (off-rank bytes)."""

    bandwidth: float | None = None

    def __post_init__(self):
        if self.bandwidth is not None:
            check_positive("bandwidth", self.bandwidth)

    def start(self, send: torch.Tensor) -> "Transfer":
        """Launch ``all_to_all_single`` of ``send`` (W, ...) asynchronously; dim 0 chunk
        j goes to rank j."""
        send = send.contiguous()
        recv = torch.empty_like(send)
        t0 = time.perf_counter()
        work = dist.all_to_all_single(recv, send, async_op=True)
        target = 0.0
        if self.bandwidth is not None:
            w = send.shape[0]
            target = send.numel() * send.element_size() * (w - 1) / w / self.bandwidth
        return Transfer(recv, work, t0, target)


@dataclass
class Transfer:
    """An All-to-All in flight; :meth:`wait` returns the received tensor."""

    recv: torch.Tensor
    work: object
    t0: float
    target: float

    def wait(self) -> torch.Tensor:
        self.work.wait()
        if self.target:
            if self.recv.is_cuda:  # NCCL's wait only orders streams: block the host
                torch.cuda.synchronize(self.recv.device)
            left = self.t0 + self.target - time.perf_counter()
            if left > 0:
                time.sleep(left)
        return self.recv


def to_owners(buf: torch.Tensor, world_size: int) -> torch.Tensor:
    """(E, C, D) capacity buffers -> (W, E/W, C, D): chunk j holds the experts rank j
    owns."""
    e, c, d = buf.shape
    return buf.view(world_size, e // world_size, c, d)


def gather_local(recv: torch.Tensor) -> torch.Tensor:
    """Received (W, E/W, C, D) -> (E/W, W·C, D): each local expert's slots from every
    rank."""
    w, el, c, d = recv.shape
    return recv.permute(1, 0, 2, 3).reshape(el, w * c, d)


def scatter_back(out: torch.Tensor, world_size: int) -> torch.Tensor:
    """Local expert outputs (E/W, W·C, D) -> (W, E/W, C, D): chunk j goes back to rank
    j."""
    el, wc, d = out.shape
    return (
        out.view(el, world_size, wc // world_size, d).permute(1, 0, 2, 3).contiguous()
    )


def ep_moe(
    x: torch.Tensor,
    router_w: torch.Tensor,
    local: tuple,
    k: int,
    capacity_factor: float,
    link: Link = Link(),
) -> torch.Tensor:
    """One expert-parallel MoE layer on this rank's tokens x (N, D), sequential
    schedule: gate -> dispatch All-to-All -> local experts -> combine All-to-All ->
    weighted sum.

    ``router_w`` (E, D) is replicated; ``local`` = (w1, b1, w2, b2) of this rank's E/W
    experts. Must run inside a process group (see :func:`launch`)."""
    check_tensor("x", x, ndim=2, floating=True)
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(
            f"x: expected at least one token of width >= 1, got shape {tuple(x.shape)}"
        )
    check_tensor("x", x, finite=True)
    check_tensor(
        "router_w",
        router_w,
        shape=(None, x.shape[1]),
        floating=True,
        nonempty=True,
        finite=True,
    )
    if (
        not isinstance(local, (tuple, list))
        or len(local) != 4
        or not all(isinstance(t, torch.Tensor) for t in local)
    ):
        raise TypeError(
            f"local: expected the (w1, b1, w2, b2) tensors of this rank's experts, "
            f"got {type(local).__name__}"
        )
    check_int("k", k, 1)
    if k > router_w.shape[0]:
        raise ValueError(
            f"k: expected at most the {router_w.shape[0]} experts of router_w, got {k}"
        )
    check_positive("capacity_factor", capacity_factor)
    if not isinstance(link, Link):
        raise TypeError(f"link: expected a Link, got {type(link).__name__}")
    w = dist.get_world_size()
    n_experts = router_w.shape[0]
    if n_experts % w:
        raise ValueError(
            f"router_w: expected a number of experts divisible by world size {w}, got "
            f"{n_experts}"
        )
    r = route(x @ router_w.t(), k, capacity_factor, check=False)
    recv = link.start(
        to_owners(dispatch(x, r, n_experts, check=False), w)
    ).wait()  # dispatch
    out = expert_ffn(gather_local(recv), *local, check=False)  # (E/W, W·C, D)
    back = link.start(scatter_back(out, w)).wait()  # combine
    return combine(back.reshape(n_experts, r.capacity, -1), r, check=False)


def ep_check_worker(
    rank: int,
    world_size: int,
    dev,
    n_tokens: int,
    d_model: int,
    n_experts: int,
    k: int,
    capacity_factor: float,
    seed: int,
) -> dict:
    """Test worker: the expert-parallel layer on this rank's tokens, and the same layer
    computed on one process with all experts, for comparison (returns both as lists)."""
    world_size = check_int("world_size", world_size, 1)
    if check_int("rank", rank, 0) >= world_size:
        raise ValueError(
            f"rank: expected a rank in [0, world_size={world_size}), got {rank}"
        )
    for name, v in (
        ("n_tokens", n_tokens),
        ("d_model", d_model),
        ("n_experts", n_experts),
    ):
        check_int(name, v, 1)
    if n_experts % world_size:
        raise ValueError(
            f"n_experts: expected a multiple of world_size={world_size}, got "
            f"{n_experts}"
        )
    if check_int("k", k, 1) > n_experts:
        raise ValueError(f"k: expected at most n_experts={n_experts}, got {k}")
    check_positive("capacity_factor", capacity_factor)
    check_int("seed", seed, 0)
    g = torch.Generator().manual_seed(seed)  # same weights everywhere
    hidden = 2 * d_model
    router_w = torch.randn(n_experts, d_model, generator=g)
    w1 = torch.randn(n_experts, d_model, hidden, generator=g) / d_model**0.5
    b1 = torch.randn(n_experts, 1, hidden, generator=g) * 0.1
    w2 = torch.randn(n_experts, hidden, d_model, generator=g) / hidden**0.5
    b2 = torch.randn(n_experts, 1, d_model, generator=g) * 0.1
    x = torch.randn(
        n_tokens, d_model, generator=torch.Generator().manual_seed(seed + 1 + rank)
    )
    el = n_experts // world_size
    sl = slice(rank * el, (rank + 1) * el)
    move = lambda *ts: [t.to(dev) for t in ts]  # noqa: E731
    x, router_w, w1, b1, w2, b2 = move(x, router_w, w1, b1, w2, b2)
    with torch.no_grad():
        y = ep_moe(x, router_w, (w1[sl], b1[sl], w2[sl], b2[sl]), k, capacity_factor)
        r = route(x @ router_w.t(), k, capacity_factor)
        ref = combine(expert_ffn(dispatch(x, r, n_experts), w1, b1, w2, b2), r)
    return {"ep": y.cpu().tolist(), "single": ref.cpu().tolist()}


# --- the two schedules of one block pair ----------------------------------------------


def top2_step(
    pair, router, local: tuple, x: torch.Tensor, link: Link, capacity_factor: float
):
    """Baseline block pair with a top-2 MoE, sequential: gate -> dispatch -> experts ->
    combine, each waiting for the previous (the MoE input exists only after block l's
    attention)."""
    b, t, d = x.shape
    w, n_experts = dist.get_world_size(), router.weight.shape[0]
    h_prev = x + pair.attn_a(pair.ln1a(x))
    h = h_prev + pair.mlp_a(pair.ln2a(h_prev))
    h_cur = h + pair.attn_b(pair.ln1b(h))
    z = pair.ln2b(h_cur).reshape(b * t, d)
    r = route(router(z), 2, capacity_factor, check=False)
    recv = link.start(
        to_owners(dispatch(z, r, n_experts, check=False), w)
    ).wait()  # dispatch
    out = expert_ffn(gather_local(recv), *local, check=False)
    back = link.start(scatter_back(out, w)).wait()  # combine
    return h_cur + combine(
        back.reshape(n_experts, r.capacity, d), r, check=False
    ).view_as(x)


def scmoe_step(
    pair,
    local: tuple,
    x: torch.Tensor,
    link: Link,
    capacity_factor: float,
    overlap: bool = True,
):
    """ScMoE block pair, eq. (5), expert parallel. ``overlap=True``: the dispatch is
    launched right after block l−1's attention and waited for only after block l's
    attention; the combine is in flight while the shared expert runs. ``overlap=False``:
    every All-to-All is waited for at once. Both compute the same numbers."""
    b, t, d = x.shape
    w, n_experts = dist.get_world_size(), pair.moe.n_experts
    h_prev = x + pair.attn_a(pair.ln1a(x))  # (B, T, D)
    zs = pair.ln_sc(h_prev).reshape(b * t, d)
    r = route(pair.moe.router(zs), 1, capacity_factor, check=False)
    sent = link.start(
        to_owners(dispatch(zs, r, n_experts, check=False), w)
    )  # dispatch launched
    recv = None if overlap else sent.wait()
    h = h_prev + pair.mlp_a(pair.ln2a(h_prev))  # in flight: MLP of l−1,
    h_cur = h + pair.attn_b(pair.ln1b(h))  # attention of l
    recv = sent.wait() if overlap else recv
    sent = link.start(
        scatter_back(expert_ffn(gather_local(recv), *local, check=False), w)
    )  # combine launched
    back = None if overlap else sent.wait()
    s = pair.shared(pair.ln2b(h_cur))  # in flight: shared expert
    back = sent.wait() if overlap else back
    return (
        h_cur
        + s
        + combine(back.reshape(n_experts, r.capacity, d), r, check=False).view_as(x)
    )


# --- the timed schedules --------------------------------------------------------------


def _median_time(fn, repeats: int, sync=None, done=None) -> float:
    """Median over ``repeats`` of this rank's wall time of fn(), each started right
    after ``sync()`` (a barrier) when given and ended by ``done()`` (a CUDA
    synchronisation) when given; the caller takes the maximum over ranks."""
    times = []
    for _ in range(repeats):
        if sync is not None:
            sync()
        t0 = time.perf_counter()
        fn()
        if done is not None:
            done()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _max_over_ranks(values: dict, device) -> dict:
    """Element-wise maximum of a dict of floats over all ranks (the slowest rank sets
    the pace)."""
    keys = sorted(values)
    t = torch.tensor([values[k] for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return dict(zip(keys, t.cpu().tolist()))


_SPEC_KEYS = (
    "d_model",
    "n_head",
    "batch",
    "seq",
    "n_experts",
    "capacity_factor",
    "repeats",
    "rhos",
    "seed",
)


def _check_spec(spec, world_size: int) -> None:
    """The settings of :func:`speed_worker` (see
    :func:`~lib.scmoe.experiment.speed_spec`)."""
    if not isinstance(spec, dict):
        raise TypeError(
            f"spec: expected a dict with keys {_SPEC_KEYS}, got {type(spec).__name__}"
        )
    missing = [k for k in _SPEC_KEYS if k not in spec]
    if missing:
        raise ValueError(f"spec: expected keys {_SPEC_KEYS}, missing {missing}")
    for k in ("d_model", "n_head", "batch", "seq", "n_experts", "repeats"):
        check_int(f"spec['{k}']", spec[k], 1)
    check_int("spec['seed']", spec["seed"], 0)
    if spec["n_experts"] % world_size:
        raise ValueError(
            f"spec['n_experts']: expected a multiple of world_size={world_size}, "
            f"got {spec['n_experts']}"
        )
    if spec["d_model"] % spec["n_head"]:
        raise ValueError(
            f"spec['d_model']: expected a multiple of "
            f"spec['n_head']={spec['n_head']}, got {spec['d_model']}"
        )
    check_positive("spec['capacity_factor']", spec["capacity_factor"])
    rhos = spec["rhos"]
    if (
        isinstance(rhos, (str, bytes))
        or not isinstance(rhos, (list, tuple))
        or not all(
            r is None
            or (isinstance(r, (int, float)) and not isinstance(r, bool) and 0 <= r < 1)
            for r in rhos
        )
    ):
        raise ValueError(
            f"spec['rhos']: expected a list of shares in [0, 1) or None, got {rhos!r}"
        )
    capacity(
        spec["batch"] * spec["seq"], spec["n_experts"], 1, spec["capacity_factor"]
    )  # validates


def speed_worker(rank: int, world_size: int, dev, spec: dict) -> dict:
    """Time the components and the three schedules of one block pair on every rank's
    tokens.

    ``spec``: d_model, n_head, batch, seq, n_experts, capacity_factor, repeats, rhos
    (list of target communication shares; ``None`` = the real transport only), seed.
    Returns per-rank medians in ms, maximised over ranks (every repeat starts at a
    barrier), and the largest difference between the overlapped and the sequential ScMoE
    outputs (they must agree).
    """
    from .model import BlockPair
    from .moe import MoE

    world_size = check_int("world_size", world_size, 1)
    if check_int("rank", rank, 0) >= world_size:
        raise ValueError(
            f"rank: expected a rank in [0, world_size={world_size}), got {rank}"
        )
    _check_spec(spec, world_size)
    torch.manual_seed(spec["seed"])  # replicated weights
    d, e, cf, reps = (
        spec["d_model"],
        spec["n_experts"],
        spec["capacity_factor"],
        spec["repeats"],
    )
    pair = BlockPair(d, spec["n_head"], "scmoe", e, cf).to(dev).eval()
    moe2 = MoE(d, e, 2, cf, 4 * d).to(dev).eval()
    gx = torch.Generator().manual_seed(spec["seed"] + 1 + rank)
    x = torch.randn(spec["batch"], spec["seq"], d, generator=gx).to(
        dev
    )  # (B, T, D) this rank's
    n, w, el = spec["batch"] * spec["seq"], world_size, e // world_size
    sl = slice(rank * el, (rank + 1) * el)
    ex1, ex2 = pair.moe.experts, moe2.experts
    loc1 = (ex1.w1[sl], ex1.b1[sl], ex1.w2[sl], ex1.b2[sl])
    loc2 = (ex2.w1[sl], ex2.b1[sl], ex2.w2[sl], ex2.b2[sl])
    sync = (
        (lambda: (torch.cuda.synchronize(dev), dist.barrier()))
        if dev.type == "cuda"
        else dist.barrier
    )
    done = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else None

    attn_a = lambda x: x + pair.attn_a(pair.ln1a(x))  # noqa: E731
    mlp_a = lambda h: h + pair.mlp_a(pair.ln2a(h))  # noqa: E731
    attn_b = lambda h: h + pair.attn_b(pair.ln1b(h))  # noqa: E731

    def top2(x, link):
        return top2_step(pair, moe2.router, loc2, x, link, cf)

    def scmoe(x, link, overlap):
        return scmoe_step(pair, loc1, x, link, cf, overlap)

    out = {}
    with torch.no_grad():
        h_prev = attn_a(x)
        h = mlp_a(h_prev)
        h_cur = attn_b(h)
        zs = pair.ln_sc(h_prev).reshape(n, d)
        z = pair.ln2b(h_cur).reshape(n, d)
        r1, r2 = (
            route(pair.moe.router(zs), 1, cf, check=False),
            route(moe2.router(z), 2, cf, check=False),
        )
        buf1, buf2 = (
            to_owners(dispatch(zs, r1, e, check=False), w),
            to_owners(dispatch(z, r2, e, check=False), w),
        )
        loc_in1, loc_in2 = (
            gather_local(buf1),
            gather_local(buf2),
        )  # same shapes as received
        real = Link()
        comp = {
            "attn": lambda: attn_a(x),
            "ffn": lambda: mlp_a(h_prev),
            "shared": lambda: pair.shared(pair.ln2b(h_cur)),
            "gate1": lambda: combine(
                dispatch(
                    zs, route(pair.moe.router(zs), 1, cf, check=False), e, check=False
                ).view(e, -1, d),
                r1,
                check=False,
            ),
            "gate2": lambda: combine(
                dispatch(
                    z, route(moe2.router(z), 2, cf, check=False), e, check=False
                ).view(e, -1, d),
                r2,
                check=False,
            ),
            "expert1": lambda: expert_ffn(loc_in1, *loc1, check=False),
            "expert2": lambda: expert_ffn(loc_in2, *loc2, check=False),
        }
        for f in comp.values():
            f()  # warm-up
        ms = {
            k: 1e3 * _median_time(f, reps, done=done) for k, f in comp.items()
        }  # compute: no barrier
        ms |= {
            k: 1e3 * _median_time(f, reps, sync, done)
            for k, f in (
                ("a2a1", lambda: real.start(buf1).wait()),
                ("a2a2", lambda: real.start(buf2).wait()),
            )
        }
        out["components_ms"] = _max_over_ranks(ms, dev)
        out["bytes_a2a1"] = buf1.numel() * buf1.element_size() * (w - 1) / w
        out["capacity"] = [r1.capacity, r2.capacity]
        y_seq, y_ovl = scmoe(x, real, False), scmoe(x, real, True)
        out["overlap_max_diff"] = float((y_seq - y_ovl).abs().max())
        runs, t_e = [], out["components_ms"]["expert1"] / 1e3
        for rho in spec["rhos"]:
            if rho is None:
                link = real
            else:  # emulate: 2 a2a / MoE = rho
                t_a = rho * t_e / (2 * (1 - rho))  # one-way time, s
                link = Link(out["bytes_a2a1"] / max(t_a, 1e-9))
            scheds = {
                "top2": lambda: top2(x, link),
                "scmoe_seq": lambda: scmoe(x, link, False),
                "scmoe_overlap": lambda: scmoe(x, link, True),
                "a2a1": lambda: link.start(buf1).wait(),
                "a2a2": lambda: link.start(buf2).wait(),
            }
            for f in scheds.values():
                f()  # warm-up
            times = {k: [] for k in scheds}
            for _ in range(reps):  # interleaved repeats
                for k, f in scheds.items():
                    sync()
                    t0 = time.perf_counter()
                    f()
                    if done is not None:
                        done()
                    times[k].append(time.perf_counter() - t0)
            med = _max_over_ranks(
                {k: 1e3 * statistics.median(v) for k, v in times.items()}, dev
            )
            runs.append({"rho": rho, **med})
        out["runs"] = runs
    return out


def measure_speed(spec: dict, world_size: int = 2, timeout_s: float = 240.0) -> dict:
    """Launch :func:`speed_worker` on ``world_size`` ranks and return rank 0's
    measurements."""
    world_size = check_int("world_size", world_size, 1)
    _check_spec(spec, world_size)
    check_positive("timeout_s", timeout_s)
    return launch(speed_worker, world_size, (spec,), timeout_s)[0]
