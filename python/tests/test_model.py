"""attn.Model against the tools it wraps: every method and its error paths.

Needs the build tree (PYTHONPATH=build/python, ATTN_BIN=build/bin) and the
trained austen-llama of ../shared (ATTN_SHARED_DIR), which CI always has;
without it the text tests skip, except under CI=true. ctest runs this file
(test/CMakeLists.txt: python-tests).
"""

import os
import shutil
import subprocess

import numpy as np
import pytest

import attn

BIN = os.environ.get("ATTN_BIN", "")
SHARED = os.environ.get("ATTN_SHARED_DIR", "")
LLAMA = os.path.join(SHARED, "models", "austen-llama")


def tool(name):
    return os.path.join(BIN, name)


def need_llama():
    if not os.path.exists(os.path.join(LLAMA, "config.json")):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{LLAMA} is missing: CI must run this test")
        pytest.skip(f"{LLAMA} is missing")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="module")
def llama(cache):
    need_llama()
    with attn.Model(LLAMA, cache_dir=cache) as model:
        yield model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A random tiny LLaMA compiled to a library, with its weights."""
    folder = tmp_path_factory.mktemp("tiny")
    subprocess.run([tool("attn-make-model"), "--preset", "tiny-llama", "--out", str(folder),
                    "--quiet"], check=True)
    library = folder / "model.so"
    subprocess.run([tool("attn-compile"), str(folder), "-o", str(library), "--quiet"],
                   check=True)
    return str(library), str(folder / "model.safetensors")


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def test_version_is_the_runtimes():
    out = run(tool("attn-run"), "--version")
    assert out.splitlines()[0] == f"attn-run (Attn) {attn.__version__}"
    assert attn.version() == attn.__version__


def test_model_facts(llama):
    assert llama.architecture == "llama"
    assert llama.vocab_size == 32000
    assert llama.weight_format == "f32" and llama.kv_format == "f32"
    assert os.path.exists(llama.library_path)


def test_generate_greedy_equals_attn_run(llama, cache):
    prompt = "It is a truth universally acknowledged"
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    printed = subprocess.run([tool("attn-run"), LLAMA, "-p", prompt, "-n", "12"], check=True,
                             capture_output=True, text=True, env=env).stdout
    assert printed.startswith(prompt)
    assert llama.generate(prompt, max_tokens=12) == printed[len(prompt):].rstrip("\n")


def test_stream_is_the_whole_text_in_pieces(llama):
    pieces = list(llama.generate("It is", max_tokens=20, temperature=0.8, top_k=40,
                                 top_p=0.95, seed=7, stream=True))
    assert len(pieces) > 1
    whole = llama.generate("It is", max_tokens=20, temperature=0.8, top_k=40, top_p=0.95,
                           seed=7)
    assert "".join(pieces) == whole
    # Another seed draws other tokens.
    assert llama.generate("It is", max_tokens=20, temperature=0.8, seed=8) != whole


def test_tokenize_and_detokenize_equal_attn_tokenize(llama):
    text = "Sir Walter Elliot, of Kellynch Hall, in Somersetshire"
    ids = llama.tokenize(text)
    printed = run(tool("attn-tokenize"), LLAMA, "-p", text).strip()
    assert ids == [int(i) for i in printed.split(",")]
    assert ids[0] == 1  # BOS, as tokenizer(text) adds it
    assert llama.tokenize(text, add_special_tokens=False) == ids[1:]
    assert llama.detokenize(ids, skip_special_tokens=True) == text
    assert llama.detokenize([]) == ""


def test_logits_equal_attn_run_dump(tiny, tmp_path):
    library, weights = tiny
    ids = [(i * 37 + 11) % 101 for i in range(20)]
    dump = tmp_path / "logits.npy"
    run(tool("attn-run"), "--lib", library, "--weights", weights, "--tokens",
        ",".join(map(str, ids)), "--dump-logits", str(dump))
    with attn.Model(library, weights) as model:
        logits = model.logits(ids)
        assert logits.shape == (20, model.vocab_size) and logits.dtype == np.float32
        np.testing.assert_array_equal(logits, np.load(dump))
        # Each call starts from position 0; numpy ids are accepted.
        np.testing.assert_array_equal(model.logits(np.array(ids, dtype=np.int64)), logits)


def test_perplexity_equals_attn_perplexity(llama, cache, tmp_path):
    with open(os.path.join(SHARED, "text", "persuasion.txt"), encoding="utf-8") as book:
        text = book.read()[:20000]
    sample = tmp_path / "sample.txt"
    sample.write_text(text, encoding="utf-8")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    out = subprocess.run([tool("attn-perplexity"), LLAMA, "-f", str(sample), "--ctx", "128",
                          "--chunks", "4"], check=True, capture_output=True, text=True,
                         env=env).stdout
    expected = float(out.split("perplexity:")[1].split()[0])
    assert llama.perplexity(text, ctx=128, chunks=4) == pytest.approx(expected, rel=1e-4)


def test_inspect_equals_attn_inspect(llama, cache, tmp_path):
    """attention/inspect/unembed against attn-inspect's arrays: a model
    loaded for generation compiles its inspection twin on first use."""
    ids = llama.tokenize("Anne Elliot had been a great favourite with her godmother, "
                         "and Anne was her favourite too.")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    subprocess.run([tool("attn-inspect"), LLAMA, "--tokens", ",".join(map(str, ids)),
                    "--out", str(tmp_path / "report"), "--cache-dir", cache], check=True,
                   capture_output=True, env=env)
    assert not llama.can_inspect
    n = len(ids)
    attention = llama.attention(ids)
    assert attention.shape == (4, 6, n, n) and attention.dtype == np.float32
    np.testing.assert_allclose(attention, np.load(tmp_path / "report" / "attention.npy"),
                               atol=1e-6)
    np.testing.assert_allclose(attention.sum(axis=-1), 1, atol=1e-5)
    assert not attention[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]].any()
    seen = llama.inspect(np.array(ids))
    assert seen.residual.shape == (5, n, 192) and seen.final_norm.shape == (n, 192)
    np.testing.assert_allclose(seen.residual, np.load(tmp_path / "report" / "residual.npy"),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(seen.logits, llama.logits(ids), rtol=1e-5, atol=1e-4)
    # The logit lens of the last layer's output is the model's output.
    np.testing.assert_allclose(llama.unembed(seen.residual[-1]), seen.logits, rtol=1e-5,
                               atol=1e-4)
    with pytest.raises(ValueError, match=r"\[T, 192\]"):
        llama.unembed(np.zeros((3, 100), dtype=np.float32))
    with pytest.raises(attn.Error, match="32000"):
        llama.attention([1, 32000])
    with pytest.raises(attn.Error, match="context"):
        llama.attention([1] * (llama.max_seq + 1))


def test_routing_equals_attn_inspect(cache, tmp_path):
    """A mixture of experts' routing (Qwen3-MoE, layer 1 dense) from
    Model.routing and in attn-inspect's report: the same library (one
    compile, cached), the same arrays."""
    folder = tmp_path / "moe"
    subprocess.run([tool("attn-make-model"), "--preset", "tiny-qwen3-moe", "--sharp", "--out",
                    str(folder), "--quiet"], check=True)
    ids = [(7 * i + 3) % 101 for i in range(24)]
    with attn.Model(folder, context=64, cache_dir=cache, inspect=True) as moe:
        assert (moe.num_experts, moe.experts_per_token) == (8, 3)
        experts, weights = moe.routing(ids)
        seen = moe.inspect(ids)
    assert experts.shape == weights.shape == (3, 24, 3) and experts.dtype == np.int32
    np.testing.assert_array_equal(seen.experts, experts)
    assert (experts[1] == -1).all() and (weights[1] == 0).all()
    for layer in (0, 2):
        assert ((experts[layer] >= 0) & (experts[layer] < 8)).all()
        assert all(len(set(row)) == 3 for row in experts[layer])
        assert (np.diff(weights[layer], axis=-1) <= 0).all()  # best first
        np.testing.assert_allclose(weights[layer].sum(-1), 1, rtol=1e-6)  # norm_topk_prob
    subprocess.run([tool("attn-inspect"), str(folder), "--tokens", ",".join(map(str, ids)),
                    "--ctx", "64", "--out", str(tmp_path / "report"), "--cache-dir", cache],
                   check=True, capture_output=True)
    np.testing.assert_array_equal(np.load(tmp_path / "report" / "experts.npy"), experts)
    np.testing.assert_array_equal(np.load(tmp_path / "report" / "expert_weights.npy"), weights)


def test_errors_raise_with_the_runtimes_message(llama, tiny, tmp_path):
    with pytest.raises(attn.Error, match="config.json"):
        attn.Model(tmp_path / "nothing")
    with pytest.raises(attn.Error, match="weight format 'fp8'"):
        attn.Model(LLAMA, weight_format="fp8")
    with pytest.raises(attn.Error, match="32000"):
        llama.logits([1, 32000])  # an id past the vocabulary
    with pytest.raises(TypeError, match="ints"):
        llama.logits([1.5, 2.0])
    with pytest.raises(TypeError, match="not text"):
        llama.logits("It is")
    with pytest.raises(ValueError, match="empty"):
        llama.logits([])
    with pytest.raises(ValueError, match="position 1 does not fit int32"):
        llama.logits([1, 2**40])
    with pytest.raises(attn.Error, match="exceeds the context"):
        llama.generate("It is", max_tokens=llama.max_seq)
    with pytest.raises(attn.Error, match="fewer than one window"):
        llama.perplexity("It is", ctx=128)
    with pytest.raises(attn.Error, match="tokenizer"):
        # The tiny model's folder has no tokenizer.json.
        attn.Model(*tiny).tokenize("hi")
    with pytest.raises(ValueError, match="compiled into"):
        attn.Model(*tiny, context=64)
    with pytest.raises(attn.Error, match="attn-compile --inspect"):
        attn.Model(*tiny).attention([1, 2])
    with pytest.raises(attn.Error, match="not a mixture of experts"):
        attn.Model(*tiny).routing([1, 2])
    closed = attn.Model(*tiny)
    closed.close()
    with pytest.raises(attn.Error, match="closed"):
        closed.logits([1])


def test_pip_installs_the_package(tmp_path, tiny):
    """pip install --no-build-isolation of the source tree gives a package
    that imports and runs (ATTN_LIBATTNRT names the library: a --target
    folder has no prefix to find it in)."""
    source = os.path.join(os.path.dirname(__file__), "..")
    with open(os.path.join(source, "pyproject.toml"), encoding="utf-8") as project:
        assert f'version = "{attn.__version__}"' in project.read()
    try:
        import pip  # noqa: F401
    except ImportError:
        pytest.skip("pip is not installed")
    # A copy: setuptools writes its build/ and egg-info beside the sources.
    copy = tmp_path / "src"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns(
        "_build.py", "__pycache__", "build", "*.egg-info", "tests"))
    target = tmp_path / "site"
    subprocess.run([os.sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-cache-dir", "--target", str(target),
                    str(copy)], check=True, cwd=tmp_path)
    assert not (target / "attn" / "_build.py").exists()
    from attn import _runtime
    library = _runtime.load()._name
    code = ("import attn, sys; m = attn.Model(sys.argv[1], sys.argv[2]); "
            "print(attn.__file__, m.logits([1, 2, 3]).shape)")
    out = subprocess.run([os.sys.executable, "-c", code, *tiny], check=True,
                         capture_output=True, text=True, cwd=tmp_path,
                         env=dict(os.environ, PYTHONPATH=str(target),
                                  ATTN_LIBATTNRT=library)).stdout
    assert out.startswith(str(target / "attn")) and out.rstrip().endswith("(3, 101)")
