"""Who this process is: command line, role in multiprocessing, MPI rank, and
the environment variables that may be recorded (an allow-list: nothing else,
and never anything that looks like a credential)."""

import os

# Variables that say how a process was launched and bound, by prefix.
_ALLOWED_PREFIXES = (
    "OMPI_", "PMI_", "PMIX_", "MPI_", "MPICH_", "HYDRA_", "MV2_", "I_MPI_",
    "SLURM_", "OMP_", "KMP_", "GOMP_", "PYTHON", "WRITERPROF_",
)
_ALLOWED_NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NUMA_POLICY")
# Even an allowed prefix never carries these out: a name with one of these
# words in it, or one of the short ones as a whole part of it (SLURM_DB_PW).
_SECRET_WORDS = ("KEY", "SECRET", "TOKEN", "PASS", "CRED", "AUTH", "COOKIE", "SESSION", "SIGNATURE",
                 "JWT", "PSK", "PRIVATE", "CERT")
_SECRET_PARTS = ("PW", "PWD", "PIN")
# Command-line options whose next argument (or =value) is a secret.
_SECRET_OPTIONS = ("--password", "--passwd", "--token", "--secret", "--key", "--api-key", "--apikey",
                   "--access-key", "--secret-key", "--auth", "--credentials")
REDACTED = "<redacted>"
_MAX_VALUE = 4096
_B64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")
_HEX = frozenset("0123456789abcdefABCDEF")

# (rank, local rank, world size) variables, per launcher, first match wins.
_RANK_SOURCES = (
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("mvapich", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE"),
    ("mpich", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"),
    ("pmix", "PMIX_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"),
    ("torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"),
)


def secret_name(name):
    """Whether a variable or parameter name says it holds a credential."""
    upper = name.upper()
    if any(word in upper for word in _SECRET_WORDS):
        return True
    parts = upper.replace("-", "_").replace(".", "_").split("_")
    return any(part in _SECRET_PARTS for part in parts)


def _looks_secret(token):
    """A value that is a credential whatever its name: a JWT, a PEM block, a
    long base64 or hex string (not a path, a list or a number)."""
    if token.startswith("-----BEGIN") or (token.startswith("eyJ") and token.count(".") == 2):
        return True
    if len(token) >= 32 and set(token) <= _HEX and not token.isdigit():
        return True
    return (len(token) >= 40 and set(token) <= _B64 and not token.startswith("/") and token.count("/") < 3
            and any(c.isupper() for c in token) and any(c.islower() for c in token)
            and any(c.isdigit() for c in token))


def redact_value(value):
    """value with any credential in it replaced: the password of a URL's
    user:password@, and every token that looks like a credential."""
    if _looks_secret(value):
        return REDACTED
    if "://" in value and "@" in value:
        scheme, _, rest = value.partition("://")
        auth, at, host = rest.partition("@")
        if at and ":" in auth and "/" not in auth:
            value = "%s://%s:%s@%s" % (scheme, auth.split(":", 1)[0], REDACTED, host)
    for sep in (",", ";", " ", ":", "="):
        if sep in value:
            return sep.join(redact_value(part) for part in value.split(sep))
    return value


def allowed_env(environ):
    """The recordable subset of an environment, credentials redacted."""
    # Names first: os.environ decodes a value only when it is asked for it.
    names = [name for name in environ if name.startswith(_ALLOWED_PREFIXES) or name in _ALLOWED_NAMES]
    return {name: redact_value(environ[name][:_MAX_VALUE]) for name in sorted(names) if not secret_name(name)}


def redact_argv(argv):
    """argv with the values of secret options (--password X, --token=X),
    secret NAME=VALUE parameters and credential-like tokens replaced."""
    out = []
    secret_next = False
    for arg in argv:
        if secret_next:
            out.append(REDACTED)
            secret_next = False
            continue
        option, eq, value = arg.partition("=")
        if option.lower() in _SECRET_OPTIONS:
            secret_next = not eq
            out.append(option + "=" + REDACTED if eq else arg)
        elif eq and option and not option.startswith("/") and secret_name(option.lstrip("-")):
            out.append(option + "=" + REDACTED)
        else:
            out.append(redact_value(arg))
    return out


def rank(environ):
    """{"rank", "local_rank", "world_size", "source"} from the launcher's variables."""
    for source, rank_name, local_name, size_name in _RANK_SOURCES:
        if rank_name in environ:
            return {
                "rank": _int(environ.get(rank_name)),
                "local_rank": _int(environ.get(local_name)),
                "world_size": _int(environ.get(size_name)),
                "source": source,
            }
    return {"rank": None, "local_rank": None, "world_size": None, "source": None}


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def cmdline(pid="self"):
    """argv as the kernel has it (sys.argv is not set yet when site runs)."""
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            raw = f.read()
    except OSError:
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]]


def exec_role(argv):
    """Role of a freshly exec'd interpreter, from its command line."""
    text = " ".join(argv)
    if "multiprocessing.forkserver import main" in text:
        return "forkserver"
    if "multiprocessing.resource_tracker import main" in text:
        return "resource_tracker"
    if "--multiprocessing-fork" in argv:
        return "spawn_child"
    return "main"


def fork_role(parent_role):
    """Role of a child forked from a process of `parent_role`."""
    return "forkserver_child" if parent_role == "forkserver" else "fork_child"


def start_time_ns():
    """When the kernel created this process, on CLOCK_MONOTONIC; clock-tick precision."""
    import time

    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    since_boot_ns = int(fields[19]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    # starttime counts on the boot-time clock, which also runs while suspended.
    return since_boot_ns - (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns())
