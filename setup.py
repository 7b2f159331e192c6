"""The I/O interposer (probes/interposer/), built as a plain shared
library beside the probe: record puts it in LD_PRELOAD. It is C with no
dependencies and not a Python module; setuptools' extension build is only
the way to compile it when the package is installed."""

import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

INTERPOSER = "writerprof.probes.libwriterprof_io"


class BuildInterposer(build_ext):
    def get_ext_filename(self, fullname):
        # Asked with the full name and with its last part alone (distutils'
        # get_ext_fullpath). No ABI tag: any interpreter, or none, loads it.
        if INTERPOSER.endswith(fullname):
            return os.path.join(*fullname.split(".")) + ".so"
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext):
        return [] if ext.name == INTERPOSER else super().get_export_symbols(ext)


setup(
    ext_modules=[Extension(
        INTERPOSER, ["probes/interposer/journal.c", "probes/interposer/wpio.c", "probes/interposer/net.c",
                     "probes/interposer/http.c"],
        depends=["probes/interposer/wpio.h", "probes/interposer/http.h"],
        extra_compile_args=["-O2", "-fvisibility=hidden", "-pthread", "-std=gnu11"],
        extra_link_args=["-pthread"], libraries=["dl"],
    )],
    cmdclass={"build_ext": BuildInterposer},
)
