"""Set-up steps finish or leave the old state: scripts/fetch_data.sh,
scripts/vendor_js.sh and the Makefile rules that call them. Nothing is downloaded: the
scripts' source hooks point at files made here (FASHION_MNIST_SRC, VENDOR_JS_TARBALLS)
and their targets at tmp_path."""

import gzip
import io
import json
import os
import pathlib
import shutil
import subprocess
import tarfile
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
FETCH = REPO / "scripts" / "fetch_data.sh"
VENDOR = REPO / "scripts" / "vendor_js.sh"
STAMP_NAME = ".vendored-1.0.15-2.3.8-3.2.2"

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None
    or shutil.which("gzip") is None
    or shutil.which("tar") is None,
    reason="needs bash, gzip and tar",
)

# uncompressed sizes: IDX header + one byte per pixel / label
FMNIST = {
    "train-images-idx3-ubyte.gz": 16 + 60000 * 784,
    "train-labels-idx1-ubyte.gz": 8 + 60000,
    "t10k-images-idx3-ubyte.gz": 16 + 10000 * 784,
    "t10k-labels-idx1-ubyte.gz": 8 + 10000,
}


def _run(script, env):
    full_env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "FETCH_DATA_ROOT",
            "FASHION_MNIST_SRC",
            "VEGA_EARTHQUAKES_SRC",
            "VENDOR_JS_STATIC",
            "VENDOR_JS_TARBALLS",
        )
    }
    if script == FETCH:  # never npm in these tests: a generated earthquakes.json
        full_env["VEGA_EARTHQUAKES_SRC"] = str(_quakes_src())
    full_env.update(env)
    return subprocess.run(
        ["bash", str(script)], env=full_env, capture_output=True, text=True, timeout=300
    )


# --- fetch_data.sh --------------------------------------------------------------------
def _quake_json(n=1707):
    """A GeoJSON FeatureCollection of ``n`` point events, as vega-datasets ships."""
    feats = [
        {
            "type": "Feature",
            "geometry": {
                "type": "Point",
                "coordinates": [i % 360 - 180, i % 180 - 90, 10.0],
            },
            "properties": {"mag": 1.0},
        }
        for i in range(n)
    ]
    return json.dumps({"type": "FeatureCollection", "features": feats})


_QUAKES = {}


def _quakes_src():
    if "dir" not in _QUAKES:
        d = pathlib.Path(tempfile.mkdtemp(prefix="quakes_src"))
        (d / "earthquakes.json").write_text(_quake_json())
        _QUAKES["dir"] = d
    return _QUAKES["dir"]


def test_fetch_data_installs_the_earthquakes_and_refuses_a_damaged_file(
    tmp_path, fmnist_src
):
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "earthquakes.json").write_text(_quake_json(1706))  # one event short
    root = tmp_path / "data"
    env = {"FETCH_DATA_ROOT": str(root), "FASHION_MNIST_SRC": str(fmnist_src)}
    r = _run(FETCH, {**env, "VEGA_EARTHQUAKES_SRC": str(bad)})
    assert r.returncode != 0 and "1706 events" in r.stderr and "retry" in r.stderr
    assert not (root / ".fetched").exists() and not (root / "earthquakes.json").exists()
    assert [p.name for p in root.iterdir() if p.name.startswith(".earth")] == []
    r = _run(FETCH, env)
    assert r.returncode == 0, r.stderr
    assert (root / "earthquakes.json").read_text() == _quake_json()
    (root / "earthquakes.json").write_text("{")  # damaged after install: repaired
    r = _run(FETCH, env)
    assert (
        r.returncode == 0 and (root / "earthquakes.json").read_text() == _quake_json()
    )


@pytest.fixture(scope="module")
def fmnist_src(tmp_path_factory):
    """The four Fashion-MNIST files with the right sizes (zeros as pixels)."""
    src = tmp_path_factory.mktemp("fmnist_src")
    for name, size in FMNIST.items():
        (src / name).write_bytes(gzip.compress(bytes(size), compresslevel=1))
    return src


def _damaged_copy(src, dest, name, how):
    shutil.copytree(src, dest)
    data = (dest / name).read_bytes()
    if how == "truncate":
        (dest / name).write_bytes(data[: len(data) // 2])
    elif how == "short":  # a whole gzip stream, but with too few bytes inside
        (dest / name).write_bytes(gzip.compress(bytes(FMNIST[name] - 1)))
    else:
        (dest / name).unlink()
    return dest


def test_fetch_data_installs_and_stamps(tmp_path, fmnist_src):
    root = tmp_path / "data"
    r = _run(
        FETCH, {"FETCH_DATA_ROOT": str(root), "FASHION_MNIST_SRC": str(fmnist_src)}
    )
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (root / "fashion-mnist").iterdir()) == sorted(FMNIST)
    assert (root / ".fetched").exists()
    assert [p.name for p in root.iterdir() if p.name.startswith(".fashion")] == []
    # idempotent: a second run with no source at all succeeds from the installed files
    r = _run(
        FETCH,
        {"FETCH_DATA_ROOT": str(root), "FASHION_MNIST_SRC": str(tmp_path / "nowhere")},
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    "name,how",
    [
        ("train-images-idx3-ubyte.gz", "truncate"),
        ("t10k-labels-idx1-ubyte.gz", "short"),
        ("train-labels-idx1-ubyte.gz", "missing"),
    ],
)
def test_fetch_data_refuses_a_damaged_set(tmp_path, fmnist_src, name, how):
    bad = _damaged_copy(fmnist_src, tmp_path / "bad", name, how)
    root = tmp_path / "data"
    r = _run(FETCH, {"FETCH_DATA_ROOT": str(root), "FASHION_MNIST_SRC": str(bad)})
    assert r.returncode != 0
    assert name in r.stderr and "retry" in r.stderr
    assert not (root / ".fetched").exists() and not (root / "fashion-mnist").exists()
    assert [p.name for p in root.iterdir()] == []  # no staging folder left behind


def test_fetch_data_repairs_a_damaged_install_or_keeps_it(tmp_path, fmnist_src):
    root = tmp_path / "data"
    env = {"FETCH_DATA_ROOT": str(root), "FASHION_MNIST_SRC": str(fmnist_src)}
    assert _run(FETCH, env).returncode == 0
    victim = root / "fashion-mnist" / "t10k-images-idx3-ubyte.gz"
    victim.write_bytes(
        victim.read_bytes()[:100]
    )  # an install cut short, stamp still there
    # a damaged source: fails, no stamp, the installed files are left as they were
    bad = _damaged_copy(
        fmnist_src, tmp_path / "bad", "train-images-idx3-ubyte.gz", "truncate"
    )
    r = _run(FETCH, {**env, "FASHION_MNIST_SRC": str(bad)})
    assert r.returncode != 0 and "train-images-idx3-ubyte.gz" in r.stderr
    assert not (root / ".fetched").exists() and len(victim.read_bytes()) == 100
    # a good source: repaired
    r = _run(FETCH, env)
    assert r.returncode == 0, r.stderr
    assert victim.read_bytes() == (fmnist_src / victim.name).read_bytes()
    assert (root / ".fetched").exists()


# --- vendor_js.sh ---------------------------------------------------------------------
def _tgz(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _tarballs(folder, tag, mathjax=None):
    folder.mkdir(parents=True)
    _tgz(
        folder / "jupyter-widgets-html-manager-1.0.15.tgz",
        {"package/dist/embed-amd.js": f"embed {tag}"},
    )
    _tgz(folder / "requirejs-2.3.8.tgz", {"package/require.js": f"require {tag}"})
    _tgz(
        folder / "mathjax-3.2.2.tgz",
        mathjax
        or {
            "package/es5/tex-mml-chtml.js": f"mathjax {tag}",
            "package/es5/output/chtml/fonts/x.js": "font",
        },
    )
    return folder


def _vendored(static):
    return {
        p: (static / p).read_text()
        for p in (
            "widgets/embed-amd.js",
            "widgets/require.js",
            "mathjax/tex-mml-chtml.js",
        )
    }


def test_vendor_js_installs_and_stamps(tmp_path):
    static = tmp_path / "_static"
    r = _run(
        VENDOR,
        {
            "VENDOR_JS_STATIC": str(static),
            "VENDOR_JS_TARBALLS": str(_tarballs(tmp_path / "v1", "v1")),
        },
    )
    assert r.returncode == 0, r.stderr
    assert _vendored(static)["mathjax/tex-mml-chtml.js"] == "mathjax v1"
    assert (static / STAMP_NAME).exists() and (
        static / "mathjax/output/chtml/fonts/x.js"
    ).exists()
    assert sorted(p.name for p in static.iterdir()) == sorted(
        [STAMP_NAME, "widgets", "mathjax"]
    )


@pytest.mark.parametrize("damage", ["corrupt", "incomplete"])
def test_vendor_js_failed_unpack_keeps_old_files(tmp_path, damage):
    static = tmp_path / "_static"
    env = {
        "VENDOR_JS_STATIC": str(static),
        "VENDOR_JS_TARBALLS": str(_tarballs(tmp_path / "v1", "v1")),
    }
    assert _run(VENDOR, env).returncode == 0
    before = _vendored(static)
    (static / STAMP_NAME).unlink()  # force a re-run
    if damage == "corrupt":
        v2 = _tarballs(tmp_path / "v2", "v2")
        tgz = v2 / "mathjax-3.2.2.tgz"
        tgz.write_bytes(tgz.read_bytes()[:40])
    else:
        v2 = _tarballs(
            tmp_path / "v2", "v2", mathjax={"package/es5/other.js": "no entry point"}
        )
    r = _run(VENDOR, {**env, "VENDOR_JS_TARBALLS": str(v2)})
    assert r.returncode != 0 and "retry" in r.stderr
    assert _vendored(static) == before  # old files untouched, widgets included
    assert not (static / STAMP_NAME).exists()
    assert sorted(p.name for p in static.iterdir()) == [
        "mathjax",
        "widgets",
    ]  # no temp folders


def test_vendor_js_stamp_without_files_reruns(tmp_path):
    static = tmp_path / "_static"
    env = {
        "VENDOR_JS_STATIC": str(static),
        "VENDOR_JS_TARBALLS": str(_tarballs(tmp_path / "v1", "v1")),
    }
    assert _run(VENDOR, env).returncode == 0
    shutil.rmtree(static / "mathjax")
    r = _run(VENDOR, env)
    assert r.returncode == 0, r.stderr
    assert _vendored(static)["mathjax/tex-mml-chtml.js"] == "mathjax v1"


# --- Makefile: a stamp whose files were deleted re-runs the step ----------------------
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize(
    "target,stamp,files,command",
    [
        (
            "data/.fetched",
            "data/.fetched",
            [f"data/fashion-mnist/{n}" for n in FMNIST] + ["data/earthquakes.json"],
            "bash scripts/fetch_data.sh",
        ),
        (
            f"book/_static/{STAMP_NAME}",
            f"book/_static/{STAMP_NAME}",
            [
                "book/_static/widgets/embed-amd.js",
                "book/_static/widgets/require.js",
                "book/_static/mathjax/tex-mml-chtml.js",
            ],
            "bash scripts/vendor_js.sh",
        ),
    ],
)
def test_makefile_checks_assets_not_only_stamp(tmp_path, target, stamp, files, command):
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    (tmp_path / "scripts").mkdir()
    for script in ("fetch_data.sh", "vendor_js.sh"):
        (tmp_path / "scripts" / script).write_text("exit 0\n")
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("x")
    (tmp_path / stamp).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / stamp).write_text("")
    future = (tmp_path / "Makefile").stat().st_mtime + 10
    os.utime(tmp_path / stamp, (future, future))  # newer than the script

    def planned():
        r = subprocess.run(
            ["make", "-n", target],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        return r.stdout

    assert command not in planned()  # stamp and files present: nothing to do
    (tmp_path / files[-1]).unlink()
    assert command in planned()  # stamp present, a file gone: the step runs again


def test_order_chapters_puts_the_longest_first():
    """`make nbval` hands chapters to its two workers longest-first (recorded runtime;
    a chapter with none counts as the longest), so no worker is left alone with a long
    chapter at the end."""
    import importlib.util

    root = pathlib.Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location(
        "order_chapters", root / "scripts" / "order_chapters.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    status = {"a": {"seconds": 10.0}, "b": {"seconds": 90.0}, "c": {"seconds": 50.0}}
    got = mod.order(
        ["book/a.ipynb", "book/b.ipynb", "book/new.ipynb", "book/c.ipynb"], status
    )
    assert got == ["book/new.ipynb", "book/b.ipynb", "book/c.ipynb", "book/a.ipynb"]
    out = subprocess.run(
        ["python3", str(root / "scripts" / "order_chapters.py"), "book/egf.ipynb"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.split() == ["book/egf.ipynb"]
