"""Simulated macOS (see ../README.md): what a Mac's Python lacks, taken away from this Linux one."""

import ctypes
import os
import resource
import sys
import types

sys.platform = "darwin"
MISSING = {"prctl", "unshare", "mount", "umount2"}


class MacLibrary(ctypes.CDLL):
    """macOS's libc: dlsym finds no Linux-only call."""

    def __getattr__(self, name):
        if name in MISSING:
            raise AttributeError(f"dlsym(RTLD_DEFAULT, {name}): symbol not found")
        return super().__getattr__(name)

    def __getitem__(self, name):
        if name in MISSING:
            raise AttributeError(f"dlsym(RTLD_DEFAULT, {name}): symbol not found")
        return super().__getitem__(name)


ctypes.CDLL = MacLibrary
os.geteuid = os.getuid = lambda: 501  # a learner's account (a Mac numbers them from 501), never root
del resource.RLIMIT_AS
if hasattr(os, "pidfd_open"):
    del os.pidfd_open

# what a Mac's Python has that this one lacks: urllib reads the system's proxy settings through it (none here)
_scproxy = types.ModuleType("_scproxy")
_scproxy._get_proxy_settings = lambda: {"exclude_simple": False, "exceptions": ()}
_scproxy._get_proxies = dict
sys.modules["_scproxy"] = _scproxy
