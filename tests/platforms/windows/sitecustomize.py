"""Simulated Windows (see ../README.md): what Windows' Python lacks, taken away from this Linux one."""

import errno
import os
import signal
import socket
import stat
import subprocess
import sys

for name in ("resource", "fcntl"):
    sys.modules[name] = None  # `import resource` raises ImportError, as on Windows
for name in ("fork", "forkpty", "killpg", "setsid", "setpgid", "getpgid", "pidfd_open"):
    if hasattr(os, name):
        delattr(os, name)
for name in ("SIGKILL", "SIGUSR1", "SIGALRM", "SIGPROF", "setitimer", "ITIMER_REAL", "ITIMER_PROF"):
    if hasattr(signal, name):
        delattr(signal, name)
for name in ("send_fds", "recv_fds"):
    if hasattr(socket, name):
        delattr(socket, name)
os.geteuid = os.getuid = lambda: 1000  # a learner's account, never root

_read, _write = os.read, os.write


def _refuse_sockets(call):
    def wrapped(fd, *args):
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, "Windows cannot os.read or os.write a socket: use recv and send")
        return call(fd, *args)

    return wrapped


os.read, os.write = _refuse_sockets(_read), _refuse_sockets(_write)
subprocess.Popen.kill = subprocess.Popen.terminate  # on Windows, kill() is terminate()
