"""One seed of the chapter's experiment: train the detector with every arm on one
generator family and test it on all of them."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lib.common import (
    check_choice,
    check_instance,
    check_int,
    check_numbers,
    check_positive,
    check_tensor,
    make_generator,
)
from lib.common.claims import seed_list

from .data import GENERATORS, make_fakes, pca_basis, sample_patches
from .model import (
    ARMS,
    Detector,
    ViT,
    adapt,
    adapted_layers,
    attention_weights,
    effective_rank,
    explained_variance,
    principal_angles,
    trainable_parameters,
)


def _check_cfg(cfg):
    from . import Config

    check_instance("cfg", cfg, Config, "a lib.effort.Config")


def _check_dict(name, value, keys, what):
    """A dict with ``keys`` (the record ``what`` of another function)."""
    if not isinstance(value, dict) or any(k not in value for k in keys):
        raise TypeError(f"{name}: expected {what}, got {type(value).__name__}")


def _check_foundation(foundation):
    _check_dict("foundation", foundation, ("vit", "ae"), "the dict of load_foundation")


def _check_arms(name, arms):
    if isinstance(arms, (str, bytes)) or not isinstance(arms, (list, tuple)):
        raise TypeError(
            f"{name}: expected a list or tuple of arms, got {type(arms).__name__}"
        )
    if not arms:
        raise ValueError(f"{name}: expected at least one arm, got {arms!r}")
    for i, arm in enumerate(arms):
        check_choice(f"{name}[{i}]", arm, ARMS)


def auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """Area under the ROC curve (the Mann–Whitney statistic, ties counted ½); labels
    are 0 (negative) or 1 (positive), ±inf scores rank like any other."""
    check_tensor("scores", scores, ndim=1, nonempty=True)
    if bool(torch.isnan(scores).any()):
        raise ValueError("scores: expected numbers, got NaN")
    check_tensor("labels", labels, shape=tuple(scores.shape))
    if bool(((labels != 0) & (labels != 1)).any()):
        raise ValueError("labels: expected 0 or 1, got another value")
    pos, neg = scores[labels == 1].double(), scores[labels == 0].double()
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError(
            f"labels: expected both classes, got {len(pos)} positives and "
            f"{len(neg)} negatives"
        )
    allv = torch.cat([pos, neg])
    order = allv.argsort()
    ranks = torch.empty_like(allv)
    ranks[order] = torch.arange(1, len(allv) + 1, dtype=allv.dtype)
    # average the ranks of ties
    uniq, inv, counts = torch.unique(allv, return_inverse=True, return_counts=True)
    sums = torch.zeros(len(uniq), dtype=allv.dtype).index_add_(0, inv, ranks)
    ranks = (sums / counts)[inv]
    u = ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2
    return float(u / (len(pos) * len(neg)))


def prepare_seed(cfg, seed: int, foundation: dict) -> dict:
    """The seed's patches: detector training and validation sets (real vs the seen
    generator's fakes, from the middle band) and a test set per generator (bottom
    band)."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    _check_foundation(foundation)
    g = make_generator(seed)
    n, nv, nt = cfg.n_train, cfg.n_val, cfg.n_test
    x, _ = sample_patches(4 * n + 4 * nv, "train", g)
    mean, basis = pca_basis(x[: 2 * n], cfg.pca_k)
    tools = {"pca": (mean, basis), "ae": foundation["ae"], "quality": cfg.quality}
    real, fake_src, donor = x[:n], x[n : 2 * n], x[2 * n : 3 * n]
    vreal, vsrc = x[3 * n : 3 * n + nv], x[3 * n + nv : 3 * n + 2 * nv]
    vdonor = x[3 * n + 2 * nv : 3 * n + 3 * nv]
    fake = make_fakes(cfg.seen, fake_src, donor, tools, g)
    vfake = make_fakes(cfg.seen, vsrc, vdonor, tools, g)
    xt, _ = sample_patches(nt * (1 + 2 * len(GENERATORS)), "test", g)
    test_real = xt[:nt]
    test = {}
    for i, name in enumerate(GENERATORS):
        src = xt[nt * (1 + 2 * i) : nt * (2 + 2 * i)]
        dn = xt[nt * (2 + 2 * i) : nt * (3 + 2 * i)]
        test[name] = make_fakes(name, src, dn, tools, g)
    return {
        "seed": seed,
        "train": (real, fake),
        "val": (vreal, vfake),
        "test_real": test_real,
        "test": test,
    }


def _class_losses(logits, y):
    per = F.cross_entropy(logits, y, reduction="none")  # (B,)
    return per[y == 0].mean(), per[y == 1].mean(), per.mean()


def train_detector(
    cfg, backbone, arm: str, lr: float, data: dict, seed: int, device="cpu",
    n_train: int | None = None, labels_from_real: bool = False,
):  # fmt: skip
    """Train one arm with Adam for ``cfg.steps`` balanced minibatches; the same head
    initialisation and the same batches for every arm of a seed.

    Returns ``(net, curves)`` with the per-step real and fake losses.
    ``labels_from_real=True`` is the asymmetry's control: two random halves of the
    real training patches play "real" and "fake".
    """
    _check_cfg(cfg)
    check_instance("backbone", backbone, ViT, "a lib.effort.ViT")
    check_choice("arm", arm, ARMS)
    check_positive("lr", lr)
    _check_dict("data", data, ("train",), "the dict of prepare_seed")
    check_int("seed", seed, 0)
    if n_train is not None:
        check_int("n_train", n_train, 1)
    g_init = make_generator(seed * 1009 + 1)
    head_seed = int(torch.randint(2**31, (1,), generator=g_init))  # same for all arms
    n_res = cfg.n_res if n_train is None else n_train
    bb = adapt(backbone, arm, n_res, generator=g_init)  # LoRA's A draws from g_init
    torch.manual_seed(head_seed)
    net = Detector(bb).to(device)
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr)
    real, fake = data["train"]
    if labels_from_real:
        half = len(real) // 2
        real, fake = real[:half], real[half : 2 * half]
    real, fake = real.to(device), fake.to(device)
    g = make_generator(seed * 1009 + 2)
    h = cfg.batch // 2
    y = torch.cat([torch.zeros(h), torch.ones(h)]).long().to(device)
    layers = adapted_layers(net) if arm == "effort_reg" else []
    curves = torch.empty(cfg.steps, 2)
    for t in range(cfg.steps):
        ir = torch.randint(len(real), (h,), generator=g).to(device)
        if_ = torch.randint(len(fake), (h,), generator=g).to(device)
        lr_, lf, loss = _class_losses(net(torch.cat([real[ir], fake[if_]])), y)
        if layers:
            # the official loss averages each regulariser over the adapted layers
            loss = loss + cfg.w_orth * sum(m.orth_loss() for m in layers) / len(layers)
            loss = loss + cfg.w_ksv * sum(m.ksv_loss() for m in layers) / len(layers)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curves[t, 0], curves[t, 1] = lr_.detach(), lf.detach()
    return net.eval(), curves


@torch.no_grad()
def evaluate(net, data: dict, device="cpu") -> dict:
    """AUC on every generator's test fakes against the test reals, the validation
    loss on the seen generator, and the effective rank of the test features."""
    check_instance("net", net, Detector, "a lib.effort.Detector")
    keys = ("test_real", "test", "val")
    _check_dict("data", data, keys, "the dict of prepare_seed")
    score = []
    xs = [data["test_real"]] + [data["test"][n] for n in GENERATORS]
    feats = [net.backbone.features(x.to(device)) for x in xs]
    score = [net.head(f).log_softmax(1)[:, 1] - net.head(f).log_softmax(1)[:, 0]
             for f in feats]  # fmt: skip
    out = {}
    for name, s in zip(GENERATORS, score[1:]):
        lab = torch.cat([torch.zeros(len(score[0])), torch.ones(len(s))])
        out[name] = auc(torch.cat([score[0], s]).cpu(), lab)
    vreal, vfake = data["val"]
    logits = net(torch.cat([vreal, vfake]).to(device))
    yv = torch.cat([torch.zeros(len(vreal)), torch.ones(len(vfake))]).long()
    out["val_loss"] = float(F.cross_entropy(logits.cpu(), yv))
    out["val_auc"] = auc((logits[:, 1] - logits[:, 0]).cpu(), yv)
    out["erank"] = effective_rank(torch.cat(feats).cpu())
    out["ev"] = explained_variance(torch.cat(feats).cpu()).tolist()
    return out


def summarise(cfg, res: dict) -> dict:
    """Seen AUC and the mean unseen AUC of one arm's :func:`evaluate` output."""
    _check_cfg(cfg)
    _check_dict("res", res, GENERATORS, "the dict of evaluate")
    unseen = [g for g in GENERATORS if g != cfg.seen]
    res = dict(res)
    res["seen"] = res[cfg.seen]
    res["unseen"] = sum(res[g] for g in unseen) / len(unseen)
    return res


def angle_summary(backbone, net, k: int) -> float:
    """The largest principal angle (degrees), averaged over the attention
    projections, between the top-``k`` left singular subspaces before and after."""
    check_instance("backbone", backbone, ViT, "a lib.effort.ViT")
    check_instance("net", net, Detector, "a lib.effort.Detector")
    check_int("k", k, 1)
    before, after = attention_weights(backbone), attention_weights(net.backbone)
    angles = [principal_angles(before[n], after[n], k).max() for n in before]
    return float(torch.stack(angles).mean()) * 180 / torch.pi


#: the arms the claims use (``effort_reg`` is run on one seed in the chapter)
CLAIM_ARMS = tuple(a for a in ARMS if a != "effort_reg")


def run_seed(cfg, seed: int, foundation: dict, device="cpu", arms=CLAIM_ARMS) -> dict:
    """Every arm of one seed at its chosen learning rate: the :func:`summarise`d
    metrics, the loss curves, the trainable-parameter count and the subspace angle;
    plus the asymmetry's control run (``"real_vs_real"``)."""
    _check_cfg(cfg)
    check_int("seed", seed, 0)
    _check_foundation(foundation)
    _check_arms("arms", arms)
    data = prepare_seed(cfg, seed, foundation)
    backbone = foundation["vit"].to(device)
    out = {}
    for arm in arms:
        net, curves = train_detector(
            cfg, backbone, arm, cfg.lrs[arm], data, seed, device
        )
        res = summarise(cfg, evaluate(net, data, device))
        res["curves"] = curves
        res["trainable"] = trainable_parameters(net)
        res["angle"] = angle_summary(backbone, net, cfg.angle_k)
        out[arm] = res
    _, curves = train_detector(
        cfg, backbone, "full", cfg.lrs["full"], data, seed, device,
        labels_from_real=True,
    )  # fmt: skip
    out["real_vs_real"] = {"curves": curves}
    return out


def asymmetry(curves: torch.Tensor) -> float:
    """Mean real loss over mean fake loss across the training steps (the paper's
    asymmetry: > 1 when the fake class is learned faster)."""
    check_tensor(
        "curves", curves, shape=(None, 2), floating=True, nonempty=True, finite=True
    )
    return float(curves[:, 0].mean() / curves[:, 1].mean().clamp(min=1e-8))


def run_seeds(cfg, seeds, foundation: dict, device="cpu") -> dict:
    """:func:`run_seed` on each seed: ``{seed: result}``."""
    _check_cfg(cfg)
    seed_list(seeds)
    _check_foundation(foundation)
    return {int(s): run_seed(cfg, int(s), foundation, device) for s in seeds}


def tune(
    cfg, seeds, foundation: dict, lrs=(1e-3, 3e-3, 1e-2, 3e-2), device="cpu", arms=ARMS
):
    """Each arm's learning rate by the lowest validation loss on the seen generator,
    averaged over ``seeds`` (the tuning seeds): ``({arm: lr}, {arm: {lr: loss}})``."""
    _check_cfg(cfg)
    seed_list(seeds)
    _check_foundation(foundation)
    check_numbers("lrs", lrs, check_positive)
    _check_arms("arms", arms)
    arms = tuple(arms)
    table = {arm: {} for arm in arms}
    for s in seeds:
        data = prepare_seed(cfg, s, foundation)
        bb = foundation["vit"].to(device)
        for arm in arms:
            for lr in lrs:
                net, _ = train_detector(cfg, bb, arm, lr, data, s, device)
                v = evaluate(net, data, device)["val_loss"]
                table[arm][lr] = table[arm].get(lr, 0.0) + v / len(seeds)
    best = {arm: min(table[arm], key=table[arm].get) for arm in arms}
    return best, table
