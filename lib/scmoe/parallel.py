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
import random
import socket
import statistics
import time
import traceback
from dataclasses import dataclass

import torch
import torch.distributed as dist

from lib.common import check_instance, check_int, check_positive, check_tensor

from .moe import MoE, capacity, combine, dispatch, expert_ffn, route


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
    #: no transfer at all: the buffer is handed back as if every rank had sent it to
    #: itself (wrong numbers, right shapes: the timing reference without communication)
    local: bool = False
    #: each transfer carries this many copies of the buffer over the real transport (a
    #: fatter exchange, real bytes, no sleep); the result is the first copy
    copies: int = 1

    def __post_init__(self):
        if self.bandwidth is not None:
            check_positive("bandwidth", self.bandwidth)
        check_int("copies", self.copies, 1)
        if not isinstance(self.local, bool):
            raise TypeError(f"local: expected a bool, got {type(self.local).__name__}")
        if self.local and self.bandwidth is not None:
            raise ValueError("bandwidth: expected None for a local (no-transfer) link")

    def start(self, send: torch.Tensor) -> "Transfer":
        """Launch ``all_to_all_single`` of ``send`` (W, ...) asynchronously; dim 0 chunk
        j goes to rank j.

        With ``copies > 1`` the transfer reads a send buffer of shape (W, copies, ...)
        that is allocated once per shape and reused: only copy 0 is written (the real
        data, the same bytes a single-copy transfer packs), the other copies are bytes
        already in place. Building the 8-fold buffer is therefore not timed as
        communication."""
        send = send.contiguous()
        if self.local:
            return Transfer(send, None, 0.0, 0.0)
        if self.copies > 1:  # (W, ...) -> (W, copies, ...): chunk j still goes to j
            shape = (send.shape[0], self.copies, *send.shape[1:])
            big = _send_buffer(shape, send.dtype, send.device)
            big[:, 0].copy_(send)
            send = big
        recv = torch.empty_like(send)
        t0 = time.perf_counter()
        work = dist.all_to_all_single(recv, send, async_op=True)
        target = 0.0
        if self.bandwidth is not None:
            w = send.shape[0]
            target = send.numel() * send.element_size() * (w - 1) / w / self.bandwidth
        return Transfer(recv, work, t0, target, copies=self.copies > 1)


#: the reused send buffers of multi-copy transfers, by (shape, dtype, device); a
#: transfer is always waited for before the next one of the same shape is launched
_SEND_BUFFERS: dict = {}


def _send_buffer(shape: tuple, dtype, device) -> torch.Tensor:
    """The send buffer of a multi-copy transfer of this shape (allocated and filled
    with zeros the first time only)."""
    key = (tuple(shape), dtype, str(device))
    if key not in _SEND_BUFFERS:
        _SEND_BUFFERS[key] = torch.zeros(shape, dtype=dtype, device=device)
    return _SEND_BUFFERS[key]


@dataclass
class Transfer:
    """An All-to-All in flight; :meth:`wait` returns the received tensor."""

    recv: torch.Tensor
    work: object
    t0: float
    target: float
    copies: bool = False
    done: bool = False

    def wait(self) -> torch.Tensor:
        """Block until the transfer is complete (once; later calls return at once)."""
        if self.done:
            return self.recv
        self.done = True
        if self.work is None:  # a local link: nothing in flight
            return self.recv
        self.work.wait()
        if self.target:
            if self.recv.is_cuda:  # NCCL's wait only orders streams: block the host
                torch.cuda.synchronize(self.recv.device)
            left = self.t0 + self.target - time.perf_counter()
            if left > 0:
                time.sleep(left)
        if self.copies:
            self.recv = self.recv[:, 0]
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


# --- one block pair, expert parallel, built from BlockPair's stages -------------------


def local_experts(moe, rank: int, world_size: int, *, check: bool = True) -> tuple:
    """This rank's slice (w1, b1, w2, b2) of ``moe``'s stacked experts (views).
    ``check=False`` skips the checks (the expert-parallel step and the timed
    schedules)."""
    if check:
        check_instance("moe", moe, MoE)
        world_size = check_int("world_size", world_size, 1)
        if check_int("rank", rank, 0) >= world_size:
            raise ValueError(
                f"rank: expected a rank in [0, world_size={world_size}), got {rank}"
            )
        if moe.n_experts % world_size:
            raise ValueError(
                f"world_size: expected a divisor of moe.n_experts={moe.n_experts}, "
                f"got {world_size}"
            )
    el = moe.n_experts // world_size
    sl = slice(rank * el, (rank + 1) * el)
    ex = moe.experts
    return ex.w1[sl], ex.b1[sl], ex.w2[sl], ex.b2[sl]


def _launch_dispatch(moe, z: torch.Tensor, link: Link):
    """Gate this rank's MoE input z (B, T, D) and launch the dispatch All-to-All."""
    flat = z.reshape(-1, z.shape[-1])  # (N, D)
    r = route(moe.router(flat), moe.k, moe.capacity_factor, check=False)
    buf = dispatch(flat, r, moe.n_experts, check=False)  # (E, C, D)
    return r, link.start(to_owners(buf, dist.get_world_size()))


def _launch_combine(moe, recv: torch.Tensor, link: Link):
    """Run the local experts on what every rank sent and launch the combine."""
    w = dist.get_world_size()
    local = local_experts(moe, dist.get_rank(), w, check=False)
    out = expert_ffn(gather_local(recv), *local, check=False)  # (E/W, W·C, D)
    return link.start(scatter_back(out, w))


def ep_step(
    pair,
    x: torch.Tensor,
    link: Link = Link(),
    overlap: bool = True,
    *,
    check: bool = True,
):
    """One block pair (any variant) on this rank's tokens x (B, T, D), its MoE expert
    parallel over the process group; returns what ``pair(x)[0]`` returns.

    Built from :class:`~lib.scmoe.model.BlockPair`'s stages. The dispatch is launched as
    soon as the MoE input exists: after block l−1's attention for ScMoE (the shortcut),
    after block l's attention otherwise. ``overlap=True`` waits for each All-to-All only
    when its result is needed: ScMoE's dispatch is in flight during block l−1's MLP and
    block l's attention, the combine during the shared expert. ``overlap=False`` waits
    at once (the sequential schedule of the same model; same numbers). ``check=False``
    skips the checks of the arguments (the timed schedules)."""
    if check:
        _check_step(pair, x, link)
    w = dist.get_world_size()
    if pair.moe.n_experts % w:
        raise ValueError(
            f"pair: expected a number of experts divisible by world size {w}, got "
            f"{pair.moe.n_experts}"
        )
    moe = pair.moe
    h_prev = pair.attn_prev(x)
    if pair.early_moe:  # ScMoE: the MoE input exists now
        r, sent = _launch_dispatch(moe, pair.moe_input(h_prev), link)
        if not overlap:
            sent.wait()
    h_cur = pair.attn_cur(pair.mlp_prev(h_prev))  # in flight: the dispatch (ScMoE)
    if not pair.early_moe:
        r, sent = _launch_dispatch(moe, pair.moe_input(h_prev, h_cur), link)
    sent = _launch_combine(moe, sent.wait(), link)
    if not overlap:
        sent.wait()
    s = pair.shared_branch(h_cur)  # in flight: the combine
    back = sent.wait().reshape(moe.n_experts, r.capacity, -1)
    return pair.join(h_cur, combine(back, r, check=False).view_as(x), s)


def _check_step(pair, x, link) -> None:
    """The arguments of :func:`ep_step`."""
    from .model import BlockPair

    check_instance("pair", pair, BlockPair)
    d = pair.moe.router.in_features
    check_tensor(
        "x", x, shape=(None, None, d), floating=True, nonempty=True, finite=True
    )
    check_instance("link", link, Link)


def _check_sizes(name: str, sizes, world_size: int) -> None:
    """The block sizes :func:`_seeded_pair` and :func:`_rank_input` read (keys
    :data:`_SIZE_KEYS`), for ``world_size`` ranks."""
    if not isinstance(sizes, dict):
        raise TypeError(
            f"{name}: expected a dict with keys {_SIZE_KEYS}, got "
            f"{type(sizes).__name__}"
        )
    missing = [k for k in _SIZE_KEYS if k not in sizes]
    if missing:
        raise ValueError(f"{name}: expected keys {_SIZE_KEYS}, missing {missing}")
    for k in ("d_model", "n_head", "batch", "seq", "n_experts"):
        check_int(f"{name}['{k}']", sizes[k], 1)
    if sizes["n_experts"] % world_size:
        raise ValueError(
            f"{name}['n_experts']: expected a multiple of world_size={world_size}, "
            f"got {sizes['n_experts']}"
        )
    if sizes["d_model"] % sizes["n_head"]:
        raise ValueError(
            f"{name}['d_model']: expected a multiple of "
            f"{name}['n_head']={sizes['n_head']}, got {sizes['d_model']}"
        )
    check_positive(f"{name}['capacity_factor']", sizes["capacity_factor"])


def _seeded_pair(variant: str, sizes: dict, seed: int, dev):
    from .model import BlockPair

    torch.manual_seed(seed)  # the same weights on every rank
    d, e = sizes["d_model"], sizes["n_experts"]
    cf = sizes["capacity_factor"]
    return BlockPair(d, sizes["n_head"], variant, e, cf).to(dev).eval()


def _rank_input(sizes: dict, seed: int, rank: int, dev) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed + 1 + rank)  # this rank's tokens
    shape = (sizes["batch"], sizes["seq"], sizes["d_model"])
    return torch.randn(*shape, generator=g).to(dev)


def step_check_worker(
    rank: int, world_size: int, dev, variant: str, sizes: dict, seed: int
) -> dict:
    """Test worker: :func:`ep_step` (overlapped and sequential) against ``pair(x)``
    on one process, same weights, this rank's tokens; the largest differences."""
    if check_int("rank", rank, 0) >= check_int("world_size", world_size, 1):
        raise ValueError(f"rank: expected a rank below {world_size}, got {rank}")
    _check_sizes("sizes", sizes, world_size)
    pair = _seeded_pair(variant, sizes, check_int("seed", seed, 0), dev)
    x = _rank_input(sizes, seed, rank, dev)
    with torch.no_grad():
        ref = pair(x)[0]
        ovl = ep_step(pair, x, Link(), overlap=True)
        seq = ep_step(pair, x, Link(), overlap=False)
    return {
        "overlap_vs_forward": float((ovl - ref).abs().max()),
        "sequential_vs_forward": float((seq - ref).abs().max()),
        "scale": float(ref.abs().max()),
    }


# --- timing ---------------------------------------------------------------------------


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


def _sync_fns(dev):
    if dev.type == "cuda":
        return (
            lambda: (torch.cuda.synchronize(dev), dist.barrier()),
            lambda: torch.cuda.synchronize(dev),
        )
    return dist.barrier, None


_SIZE_KEYS = ("d_model", "n_head", "batch", "seq", "n_experts", "capacity_factor")
_SPEC_KEYS = _SIZE_KEYS + ("repeats", "rhos", "copies", "seeds")


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
    seeds = spec["seeds"]
    if (
        not isinstance(seeds, (list, tuple))
        or not seeds
        or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)
    ):
        raise ValueError(
            f"spec['seeds']: expected a non-empty list of ints >= 0, got {seeds!r}"
        )
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
            isinstance(r, (int, float)) and not isinstance(r, bool) and 0 <= r < 1
            for r in rhos
        )
    ):
        raise ValueError(
            f"spec['rhos']: expected a list of shares in [0, 1), got {rhos!r}"
        )
    copies = spec["copies"]
    if (
        not isinstance(copies, (list, tuple))
        or not copies
        or any(isinstance(c, bool) or not isinstance(c, int) or c < 1 for c in copies)
    ):
        raise ValueError(
            f"spec['copies']: expected a non-empty list of ints >= 1, got {copies!r}"
        )


def build_speed(rank: int, world_size: int, dev, spec: dict, seed: int) -> dict:
    """Building: the top-2 and the ScMoE block pair of ``seed`` (replicated weights,
    top-2 with as many experts), this rank's tokens, and the stage inputs the component
    timings need."""
    world_size = check_int("world_size", world_size, 1)
    if check_int("rank", rank, 0) >= world_size:
        raise ValueError(
            f"rank: expected a rank in [0, world_size={world_size}), got {rank}"
        )
    _check_spec(spec, world_size)
    check_int("seed", seed, 0)
    pairs = {v: _seeded_pair(v, spec, seed + i, dev) for i, v in enumerate(_TIMED)}
    x = _rank_input(spec, seed, rank, dev)
    st = {"pairs": pairs, "x": x, "world_size": world_size, "rank": rank}
    with torch.no_grad():
        sc = pairs["scmoe"]
        st["h_prev"] = sc.attn_prev(x)
        st["h"] = sc.mlp_prev(st["h_prev"])
        st["h_cur"] = sc.attn_cur(st["h"])
        for v, k in (("scmoe", "1"), ("top2", "2")):
            p = pairs[v]
            z = p.moe_input(st["h_prev"], st["h_cur"]).reshape(-1, spec["d_model"])
            r = route(p.moe.router(z), p.moe.k, p.moe.capacity_factor, check=False)
            buf = to_owners(dispatch(z, r, p.moe.n_experts, check=False), world_size)
            st["z" + k], st["r" + k], st["buf" + k] = z, r, buf
    return st


_TIMED = ("scmoe", "top2")
#: the keys of :func:`build_speed`'s result
_ST_KEYS = ("pairs", "x", "world_size", "rank", "h_prev", "h", "h_cur")
_ST_KEYS += tuple(f"{a}{k}" for k in "12" for a in ("z", "r", "buf"))


def _check_st(st) -> None:
    """The stage inputs of :func:`build_speed`."""
    if not isinstance(st, dict):
        raise TypeError(
            f"st: expected the dict of build_speed, got {type(st).__name__}"
        )
    missing = [k for k in _ST_KEYS if k not in st]
    if missing:
        raise ValueError(f"st: expected the keys of build_speed, missing {missing}")


def time_components(st: dict, repeats: int, dev) -> dict:
    """Timing components: each stage of the block pair alone (ms; compute without a
    barrier, each All-to-All over the real transport from a barrier), maxima over
    ranks."""
    _check_st(st)
    check_int("repeats", repeats, 1)
    sync, done = _sync_fns(dev)
    p1, p2 = st["pairs"]["scmoe"], st["pairs"]["top2"]
    real = Link()

    def gate(p, z, r):  # gating and packing: route, dispatch, combine
        rr = route(p.moe.router(z), p.moe.k, p.moe.capacity_factor, check=False)
        buf = dispatch(z, rr, p.moe.n_experts, check=False)
        return combine(buf, r, check=False)

    comp = {
        "attn": lambda: p1.attn_prev(st["x"]),
        "ffn": lambda: p1.mlp_prev(st["h_prev"]),
        "shared": lambda: p1.shared_branch(st["h_cur"]),
        "gate1": lambda: gate(p1, st["z1"], st["r1"]),
        "gate2": lambda: gate(p2, st["z2"], st["r2"]),
        "expert1": lambda: expert_ffn(
            gather_local(st["buf1"]), *_local(p1, st), check=False
        ),
        "expert2": lambda: expert_ffn(
            gather_local(st["buf2"]), *_local(p2, st), check=False
        ),
    }
    with torch.no_grad():
        for f in comp.values():
            f()  # warm-up
        ms = {k: 1e3 * _median_time(f, repeats, done=done) for k, f in comp.items()}
        for k in ("1", "2"):
            ms["a2a" + k] = 1e3 * _median_time(
                lambda: real.start(st["buf" + k]).wait(), repeats, sync, done
            )
    return _max_over_ranks(ms, dev)


def _local(pair, st):
    return local_experts(pair.moe, st["rank"], st["world_size"], check=False)


#: the timed schedules: (pair, link kind, overlap); ``scmoe_seq_again`` is the
#: sequential schedule timed a second time (the negative control of the overlap)
SCHEDULE_RUNS = {
    "top2": ("top2", "link", False),
    "scmoe_seq": ("scmoe", "link", False),
    "scmoe_overlap": ("scmoe", "link", True),
    "scmoe_seq_again": ("scmoe", "link", False),
    "scmoe_local": ("scmoe", "local", False),
}


def time_schedules(
    st: dict, link: Link, repeats: int, dev, *, order_seed: int = 0
) -> dict:
    """Timing schedules: every entry of :data:`SCHEDULE_RUNS` on ``link`` and the two
    All-to-Alls on that link alone, each from a barrier; per-rank medians in ms, maxima
    over ranks, and the paired statistics of :func:`_paired` (means over ranks).

    Every repeat runs each of them once, in a fresh random order drawn from
    ``random.Random(order_seed)`` (the same order on every rank, since every rank
    passes the same seed). A fixed order would give every schedule the same
    predecessor in every repeat, and what a step leaves behind (caches, the allocator,
    the other rank still finishing) then biases the differences the statistics take;
    a random order turns that bias into noise shared by all schedules."""
    _check_st(st)
    check_instance("link", link, Link)
    check_int("repeats", repeats, 1)
    rng = random.Random(check_int("order_seed", order_seed, 0))
    sync, done = _sync_fns(dev)
    fns = {
        k: (
            lambda p=p, lk=lk, o=o: ep_step(
                st["pairs"][p],
                st["x"],
                Link(local=True) if lk == "local" else link,
                o,
                check=False,
            )
        )
        for k, (p, lk, o) in SCHEDULE_RUNS.items()
    }
    fns["a2a1"] = lambda: link.start(st["buf1"]).wait()
    fns["a2a2"] = lambda: link.start(st["buf2"]).wait()
    names = list(fns)
    times = {k: [] for k in names}
    with torch.no_grad():
        for f in fns.values():
            f()  # warm-up
        for _ in range(repeats):
            order = list(names)
            rng.shuffle(order)
            for k in order:
                sync()
                t0 = time.perf_counter()
                fns[k]()
                if done is not None:
                    done()
                times[k].append(time.perf_counter() - t0)
    med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    out = _max_over_ranks(med, dev)
    out["paired"] = _mean_over_ranks(_paired(times), dev)
    return out


def _paired(times: dict) -> dict:
    """Statistics of repeats that ran side by side (so they shared whatever else loaded
    the machine at that moment): medians of per-repeat differences and ratios.

    ``hidden``: median(seq − overlap) / median(seq − local), the share of the
    schedule's communication time that the overlap removes; ``hidden_control``: the
    same with the sequential schedule's second timing in place of the overlapped one;
    ``top2_over_overlap`` and ``top2_over_seq``: medians of per-repeat ratios."""
    t = {k: torch.tensor(v, dtype=torch.float64) for k, v in times.items()}
    seq = t["scmoe_seq"]
    comm = float((seq - t["scmoe_local"]).median())
    return {
        "comm_ms": 1e3 * comm,
        "hidden": float((seq - t["scmoe_overlap"]).median()) / comm,
        "hidden_control": float((seq - t["scmoe_seq_again"]).median()) / comm,
        "top2_over_overlap": float((t["top2"] / t["scmoe_overlap"]).median()),
        "top2_over_seq": float((t["top2"] / seq).median()),
        "seq_over_overlap": float((seq / t["scmoe_overlap"]).median()),
    }


def _flop_top2(t: dict, comp: dict) -> dict:
    """Top-2 at FLOP-proportional expert cost: its step time less what its experts
    take beyond twice top-1's (timed alone; top-2 computes twice the slots, but on this
    CPU the larger buffers run slower per FLOP), over the overlapped and the
    sequential ScMoE step (medians, maxima over ranks)."""
    excess = max(comp["expert2"] - 2 * comp["expert1"], 0.0)
    top2 = t["top2"] - excess
    return {
        "top2_excess_ms": excess,
        "top2_flop_over_overlap": top2 / t["scmoe_overlap"],
        "top2_flop_over_seq": top2 / t["scmoe_seq"],
    }


def _mean_over_ranks(values: dict, device) -> dict:
    """Element-wise mean of a dict of floats over all ranks."""
    keys = sorted(values)
    t = torch.tensor([values[k] for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return dict(zip(keys, (t / dist.get_world_size()).cpu().tolist()))


def speed_worker(rank: int, world_size: int, dev, spec: dict) -> list:
    """For each seed of ``spec``: build (:func:`build_speed`), time the components
    (:func:`time_components`) and the schedules over the real transport and over
    emulated links at the communication shares ``spec['rhos']``
    (:func:`time_schedules`); ``spec['copies']``: real-transport runs, each transfer
    carrying that many copies of its buffer (1 = the block's own exchange). Returns one
    dict per seed; the overlapped step's largest difference from ``pair(x)`` is
    included (it must be ~0)."""
    world_size = check_int("world_size", world_size, 1)
    if check_int("rank", rank, 0) >= world_size:
        raise ValueError(
            f"rank: expected a rank in [0, world_size={world_size}), got {rank}"
        )
    _check_spec(spec, world_size)
    out = []
    for seed in spec["seeds"]:
        st = build_speed(rank, world_size, dev, spec, seed)
        comp = time_components(st, spec["repeats"], dev)
        with torch.no_grad():
            sc = st["pairs"]["scmoe"]
            diff = (ep_step(sc, st["x"], Link(), True) - sc(st["x"])[0]).abs().max()
        bytes1 = st["buf1"].numel() * st["buf1"].element_size()
        bytes1 *= (world_size - 1) / world_size
        links = [(None, c, Link(copies=c)) for c in spec["copies"]]  # real transport
        for rho in spec["rhos"]:  # emulate: 2 a2a / (2 a2a + experts) = rho
            t_a = rho * comp["expert1"] / 1e3 / (2 * (1 - rho))  # one way, s
            links.append((rho, 1, Link(bytes1 / max(t_a, 1e-9))))
        runs = []
        for i, (rho, c, link) in enumerate(links):
            t = time_schedules(
                st, link, spec["repeats"], dev, order_seed=1000 * seed + i
            )
            t["paired"] |= _flop_top2(t, comp)
            runs.append({"rho": rho, "copies": c, **t})
        out.append(
            {
                "seed": seed,
                "components_ms": comp,
                "bytes_a2a1": bytes1,
                "capacity": [st["r1"].capacity, st["r2"].capacity],
                "overlap_vs_forward": float(diff),
                "runs": runs,
            }
        )
    return out


def measure_speed(spec: dict, world_size: int = 2, timeout_s: float = 240.0) -> list:
    """Launch :func:`speed_worker` on ``world_size`` ranks and return rank 0's
    measurements (one dict per seed; every number is already a maximum over ranks)."""
    world_size = check_int("world_size", world_size, 1)
    _check_spec(spec, world_size)
    check_positive("timeout_s", timeout_s)
    return launch(speed_worker, world_size, (spec,), timeout_s)[0]


# --- one GPU: a copy engine against compute (FULL only; not run on the CPU) -----------


def measure_cuda_streams(spec: dict, device, seed: int = 0) -> dict:
    """On one CUDA device: ScMoE's block pair with its two All-to-Alls replaced by real
    device→host→device copies of the dispatched buffer and of the experts' output
    (pinned memory, the copy engine over PCIe), issued on a side stream.
    ``sequential`` waits for each copy at once; ``overlap`` waits where :func:`ep_step`
    does; ``copies`` runs the two copy rounds alone (no compute). The pinned host
    buffers are allocated once, before any timing; tensors the side stream reads or
    writes are marked with ``record_stream``. Every repeat runs the three in a fresh
    random order (``random.Random(seed)``), each timed with CUDA events from a
    synchronised device. Returns the median ms of each, the hidden share
    (sequential − overlap) / copies, and the overlapped step's largest difference from
    ``pair(x)``. This measures the GPU overlapping a busy copy engine with kernels; it
    does not measure a network."""
    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"device: expected a CUDA device, got {dev}")
    _check_spec(spec, 1)
    check_int("seed", seed, 0)
    pair = _seeded_pair("scmoe", spec, seed, dev)
    x = _rank_input(spec, seed, 0, dev)
    side = torch.cuda.Stream(dev)
    moe = pair.moe
    with torch.no_grad():  # the buffers' shape, to allocate pinned memory once
        flat = pair.moe_input(pair.attn_prev(x)).reshape(-1, x.shape[-1])
        r0 = route(moe.router(flat), 1, moe.capacity_factor, check=False)
        shape = dispatch(flat, r0, moe.n_experts, check=False).shape
    hosts = [torch.empty(shape, dtype=x.dtype, pin_memory=True) for _ in range(2)]
    torch.cuda.synchronize(dev)

    def copy_round(buf, host):  # out and back on the side stream
        main = torch.cuda.current_stream(dev)
        back = torch.empty_like(buf)  # allocated on the compute stream
        side.wait_stream(main)
        with torch.cuda.stream(side):
            host.copy_(buf, non_blocking=True)
            back.copy_(host, non_blocking=True)
        buf.record_stream(side)
        back.record_stream(side)
        ev = torch.cuda.Event()
        ev.record(side)
        return back, ev

    def step(overlap: bool):
        main = torch.cuda.current_stream(dev)
        h_prev = pair.attn_prev(x)
        flat = pair.moe_input(h_prev).reshape(-1, x.shape[-1])
        r = route(moe.router(flat), 1, moe.capacity_factor, check=False)
        buf = dispatch(flat, r, moe.n_experts, check=False)
        recv, ev = copy_round(buf, hosts[0])
        if not overlap:
            main.wait_event(ev)
        h_cur = pair.attn_cur(pair.mlp_prev(h_prev))
        main.wait_event(ev)
        out = moe.experts(recv)
        back, ev = copy_round(out, hosts[1])
        if not overlap:
            main.wait_event(ev)
        s = pair.shared_branch(h_cur)
        main.wait_event(ev)
        return pair.join(h_cur, combine(back, r, check=False).view_as(x), s)

    bufs = [torch.randn(shape, device=dev) for _ in range(2)]

    def copies_alone():
        main = torch.cuda.current_stream(dev)
        for b, h in zip(bufs, hosts):
            _, ev = copy_round(b, h)
            main.wait_event(ev)

    fns = {
        "sequential": lambda: step(False),
        "overlap": lambda: step(True),
        "copies": copies_alone,
    }
    rng = random.Random(seed)
    times = {k: [] for k in fns}
    with torch.no_grad():
        diff = float((step(True) - pair(x)[0]).abs().max())
        for f in fns.values():
            f()  # warm-up
        for _ in range(spec["repeats"]):
            order = list(fns)
            rng.shuffle(order)
            for k in order:
                torch.cuda.synchronize(dev)
                a, b = torch.cuda.Event(True), torch.cuda.Event(True)
                a.record()
                fns[k]()
                b.record()
                torch.cuda.synchronize(dev)
                times[k].append(a.elapsed_time(b))
    ms = {f"{k}_ms": statistics.median(v) for k, v in times.items()}
    hidden = (ms["sequential_ms"] - ms["overlap_ms"]) / max(ms["copies_ms"], 1e-9)
    return {**ms, "hidden": hidden, "overlap_vs_forward": diff}
