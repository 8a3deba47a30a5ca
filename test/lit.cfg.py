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

config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "reference", "ops", "model", "corpus"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%attn_src_root", config.attn_src_root))
# Kernel tests run lowered IR in mlir-runner; vector.print calls into this.
config.substitutions.append(
    ("%mlir_c_runner_utils", os.path.join(config.llvm_lib_dir, "libmlir_c_runner_utils.so")))

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
# FileCheck, not, count from LLVM_TOOLS_DIR.
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
tool_dirs = [config.attn_tools_dir, config.llvm_tools_dir]
tools = ["attn-opt", "attn-compile", "attn-run", "attn-make-model", "attn-ref-model",
         "attn-npy-compare", "mlir-translate", "mlir-runner", "split-file", "llvm-nm"]
llvm_config.add_tool_substitutions(tools, tool_dirs)
