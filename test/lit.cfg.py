# -*- Python -*-
# lit configuration of the attn regression suite.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "ATTN"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.attn_obj_root, "test")
# End-to-end tests compile for the machine they run on.
import platform
if platform.machine() in ("x86_64", "AMD64"):
    config.available_features.add("native-cpu")
    # The q8_0 / q4_0 kernels' int8 dot products: vpdpbusd (VNNI) or
    # vpmaddubsw (AVX2 at 8 lanes, AVX-512BW at 16).
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            flags = cpuinfo.read().split()
        # (attn-compile uses 16 lanes wherever there is AVX-512F.)
        if "avx2" in flags and ("avx512f" not in flags or "avx512bw" in flags):
            config.available_features.add("int8-dot")
        # vpdpbusd on 8-lane vectors: AVX-512 VNNI with VL, or AVX-VNNI.
        if ("avx512_vnni" in flags and "avx512vl" in flags) or "avx_vnni" in flags:
            config.available_features.add("vnni-256")
        # A library for Sapphire Rapids is refused on a CPU without its
        # AVX-512 FP16 (every AMD CPU so far).
        if "avx512_fp16" not in flags:
            config.available_features.add("no-avx512-fp16")
    except OSError:
        pass

# The build's compiler check runs the system's GCC when there is one.
import shutil
if shutil.which("gcc") and shutil.which("g++"):
    config.available_features.add("gcc")

config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "reference", "ops", "model", "corpus"]

# Tests on the trained models (../shared, which CI always has) and on the
# fetched test data (scripts/test-data.sh) say REQUIRES: shared-models or
# test-data; without them they are unsupported, except under CI=true, where
# a missing folder is an error: CI must run them.
test_data = os.environ.get("ATTN_TEST_DATA") or config.attn_test_data_dir
shared = os.environ.get("ATTN_SHARED_DIR") or config.attn_shared_dir
ci = os.environ.get("CI") == "true"
for feature, path, marker in [
    ("shared-models", shared, "models/austen-llama/model.safetensors"),
    ("test-data", test_data, "tokenizers/llama2/tokenizer.json"),
]:
    if os.path.exists(os.path.join(path, marker)):
        config.available_features.add(feature)
    elif ci:
        lit_config.fatal("%s is missing (%s): CI must run the %s tests"
                         % (os.path.join(path, marker), feature, feature))
config.substitutions.append(("%shared", shared))
config.substitutions.append(("%testdata", test_data))
config.environment["ATTN_TEST_DATA"] = test_data
# Compiled libraries of model folders are cached under the test's own
# folders, never in $HOME.
config.environment["XDG_CACHE_HOME"] = os.path.join(config.test_exec_root, "xdg-cache")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%attn_src_root", config.attn_src_root))
# The version the tools report, and the commit when built from a checkout.
config.substitutions.append(("%attn_version", config.attn_version))
config.substitutions.append(("%attn_git_commit", config.attn_git_commit))
if config.attn_git_commit:
    config.available_features.add("git-checkout")
# Sanitizer builds make only some tools (scripts/sanitize.sh).
if os.path.exists(os.path.join(config.attn_tools_dir, "attn-bench")):
    config.available_features.add("attn-bench")
# Kernel tests run lowered IR in mlir-runner; vector.print calls into this.
config.substitutions.append(
    ("%mlir_c_runner_utils", os.path.join(config.llvm_lib_dir, "libmlir_c_runner_utils.so")))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
# FileCheck, not, count from LLVM_TOOLS_DIR.
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
tools = ["attn-opt", "attn-compile", "attn-run", "attn-make-model", "attn-ref-model",
         "attn-npy-compare", "attn-tokenize", "attn-perplexity", "attn-bench", "mlir-translate",
         "mlir-runner", "split-file", "llvm-nm", "llvm-objdump"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
