"""Two plain shared libraries, C with no dependencies and not Python
modules; setuptools' extension build is only the way to compile them when
the package is installed:
- the I/O interposer (probes/interposer/), beside the probe: record puts it
  in LD_PRELOAD;
- the analysis's interval kernels (writerprof/analysis/native/), which
  writerprof.analysis.kernels loads with ctypes."""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

INTERPOSER = "writerprof.probes.libwriterprof_io"
# In a directory that is no package: a .so among a package's modules reads
# as an extension module to whatever lists them (pkgutil).
KERNELS = "writerprof.analysis.native.libwriterprof_kernels"
LIBRARIES = (INTERPOSER, KERNELS)


class BuildLibraries(build_ext):
    def get_ext_filename(self, fullname):
        # Asked with the full name and with its last part alone (distutils'
        # get_ext_fullpath). No ABI tag: any interpreter, or none, loads it.
        if any(library.endswith(fullname) for library in LIBRARIES):
            return os.path.join(*fullname.split(".")) + ".so"
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext):
        return [] if ext.name in LIBRARIES else super().get_export_symbols(ext)


setup(
    ext_modules=[Extension(
        INTERPOSER, ["probes/interposer/journal.c", "probes/interposer/wpio.c", "probes/interposer/net.c",
                     "probes/interposer/http.c"],
        depends=["probes/interposer/wpio.h", "probes/interposer/http.h"],
        extra_compile_args=["-O2", "-fvisibility=hidden", "-pthread", "-std=gnu11"],
        extra_link_args=["-pthread"], libraries=["dl"],
    ), Extension(
        KERNELS, ["writerprof/analysis/native/kernels.c"],
        extra_compile_args=["-O2", "-fvisibility=hidden", "-std=gnu11"],
    )],
    cmdclass={"build_ext": BuildLibraries},
)
