"""cuda_configure: makes @local_cuda from the CUDA toolkit when one is installed.

Looks at $CUDA_PATH, then /usr/local/cuda. With a toolkit, @local_cuda//:cudart is the CUDA
runtime (headers + libcudart.so) and @local_cuda//:defs.bzl sets HAS_CUDA = True. Without
one, :cudart is an empty library and HAS_CUDA = False, so every target still builds and the
runtime falls back to host memory. Whether a *device* exists is decided at run time.
"""

def _cuda_configure_impl(repository_ctx):
    candidates = []
    env_path = repository_ctx.os.environ.get("CUDA_PATH", "")
    if env_path:
        candidates.append(env_path)
    candidates.append("/usr/local/cuda")

    found = ""
    for path in candidates:
        if repository_ctx.path(path + "/include/cuda_runtime.h").exists and \
           repository_ctx.path(path + "/lib64/libcudart.so").exists:
            found = path
            break

    if not found:
        repository_ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
# No CUDA toolkit was found at build time: the GPU upload path is compiled out.
cc_library(name = "cudart")
""")
        repository_ctx.file("defs.bzl", "HAS_CUDA = False\nCUDA_PATH = \"\"\n")
        return

    repository_ctx.symlink(found + "/include", "include")
    repository_ctx.symlink(found + "/lib64", "lib64")
    repository_ctx.file("BUILD", """
package(default_visibility = ["//visibility:public"])
# CUDA toolkit found at {path}.
cc_import(
    name = "cudart_so",
    shared_library = "lib64/libcudart.so",
)
cc_library(
    name = "cudart",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp", "include/**/*.inl"]),
    includes = ["include"],
    linkopts = ["-Wl,-rpath,{path}/lib64"],
    deps = [":cudart_so"],
)
""".format(path = found))
    repository_ctx.file("defs.bzl", "HAS_CUDA = True\nCUDA_PATH = \"{}\"\n".format(found))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_PATH"],
    local = True,
)
