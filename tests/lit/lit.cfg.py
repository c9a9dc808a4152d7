# lit configuration for graft's FileCheck tests (tests/lit).
#
# Run through ctest (the `lit` test), or by hand:
#   python3 /usr/lib/llvm-19/build/utils/lit/lit.py -sv \
#       --param graft_build_dir=build tests/lit
# Parameters:
#   graft_build_dir  the CMake build directory (required); temporary files
#                    go under <build>/tests/lit
#   graft            the graft binary (default: <build>/cli/graft)
#   llvm_tools_dir   where FileCheck, not and split-file live
#                    (default: /usr/lib/llvm-19/bin)

import os

import lit.formats

config.name = "graft"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".graft", ".test"]
config.excludes = ["lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
source_root = os.path.dirname(os.path.dirname(config.test_source_root))

build_dir = lit_config.params.get("graft_build_dir")
if not build_dir:
    lit_config.fatal("pass --param graft_build_dir=<the CMake build directory>")
build_dir = os.path.abspath(build_dir)
config.test_exec_root = os.path.join(build_dir, "tests", "lit")

graft = os.path.abspath(
    lit_config.params.get("graft", os.path.join(build_dir, "cli", "graft")))
if not os.path.isfile(graft):
    lit_config.fatal(f"graft binary not found at {graft}: build the 'graft' target")

tools_dir = lit_config.params.get("llvm_tools_dir", "/usr/lib/llvm-19/bin")
for tool in ["FileCheck", "not", "split-file"]:
    if not os.path.isfile(os.path.join(tools_dir, tool)):
        lit_config.fatal(f"{tool} not found in {tools_dir} (set --param llvm_tools_dir)")

config.substitutions.append(("%graft", graft))
config.substitutions.append(("%source", source_root))

# Features from the optional parts the binary has (`graft --version` lists
# them): tests of them say `REQUIRES: onnx` or `REQUIRES: graphviz`.
import subprocess
_version = subprocess.run([graft, "--version"], capture_output=True, text=True).stdout
for line in _version.splitlines():
    if line.startswith("with:"):
        config.available_features.update(line.split()[1:])
config.substitutions.append(("%docs", os.path.join(source_root, "docs")))
# Tools by name, as LLVM's own tests write them; the look-arounds keep
# "FileCheck" inside paths or options, and "not" inside words, untouched.
for tool in ["FileCheck", "not", "split-file"]:
    config.substitutions.append(
        (r"(?<![-\w./])" + tool + r"(?![-\w./])", os.path.join(tools_dir, tool)))

# A predictable environment: no user locale or colours in messages.
config.environment["LC_ALL"] = "C"
config.environment["PATH"] = os.pathsep.join(
    [tools_dir, os.environ.get("PATH", "/usr/bin:/bin")])
