"""Who this process is: command line, role in multiprocessing, MPI rank, and
the environment variables that may be recorded (an allow-list: nothing else,
and never anything that looks like a credential)."""

import os

# Every writer redacts through here: the probe's identity line, record's
# samplers, run.json (redact_argv); py-spy's stacks (redact.redact_joined).
from .redact import REDACTED, redact_argv, redact_value, secret_name  # noqa: F401

# Variables that say how a process was launched and bound, by prefix.
_ALLOWED_PREFIXES = (
    "OMPI_", "PMI_", "PMIX_", "MPI_", "MPICH_", "HYDRA_", "MV2_", "I_MPI_",
    "SLURM_", "OMP_", "KMP_", "GOMP_", "PYTHON", "WRITERPROF_",
)
_ALLOWED_NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NUMA_POLICY")
_MAX_VALUE = 4096

# (rank, local rank, world size) variables, per launcher, first match wins.
_RANK_SOURCES = (
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("mvapich", "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE"),
    ("mpich", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"),
    ("pmix", "PMIX_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"),
    ("torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"),
)


def allowed_env(environ):
    """The recordable subset of an environment, credentials redacted."""
    # Names first: os.environ decodes a value only when it is asked for it.
    names = [name for name in environ if name.startswith(_ALLOWED_PREFIXES) or name in _ALLOWED_NAMES]
    return {name: redact_value(environ[name][:_MAX_VALUE]) for name in sorted(names) if not secret_name(name)}


def rank(environ):
    """{"rank", "local_rank", "world_size", "source"} from the launcher's variables:
    the first source whose rank variable is set, and what it leaves out
    (srun's pmi2 sets PMI_RANK but no MPI_LOCALRANKID) from another source
    that numbers this same process: the same rank, and the same world size
    where both have one (under Hydra inside an allocation, SLURM_PROCID and
    SLURM_NTASKS are its proxy's, not the rank's)."""
    found = [(source, _int(environ.get(rank_name)), _int(environ.get(local_name)), _int(environ.get(size_name)))
             for source, rank_name, local_name, size_name in _RANK_SOURCES if rank_name in environ]
    if not found:
        return {"rank": None, "local_rank": None, "world_size": None, "source": None}
    source, number, local, size = found[0]
    for _, other_number, other_local, other_size in found[1:]:
        sizes_differ = None not in (size, other_size) and other_size != size
        if number is not None and other_number == number and not sizes_differ:
            local = other_local if local is None else local
            size = other_size if size is None else size
    return {"rank": number, "local_rank": local, "world_size": size, "source": source}


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def memory_binding(proc="/proc/self"):
    """How the process's memory is bound: {"policy": its memory policy's mode
    ("default", "bind", "interleave", "prefer", "local", ...: what
    numactl --membind/--interleave/--preferred, srun --mem-bind or an MPI
    launcher set), "nodes": the policy's nodes (None: it names none),
    "allowed": the nodes its cpuset allows (Mems_allowed_list)}; a part not
    read is None (the policy, on a kernel without NUMA). The policy is the
    one numa_maps gives the first mapping: a mapping without a policy of its
    own shows its task's. Both are inherited across fork and exec."""
    found = {"policy": None, "nodes": None, "allowed": None}
    try:
        fd = os.open(proc + "/numa_maps", os.O_RDONLY)
        try:
            first = os.read(fd, 512).split(b"\n", 1)[0].decode("ascii", "replace")  # its first line only
        finally:
            os.close(fd)
        found.update(parse_policy(first))
    except (OSError, ValueError):
        pass
    try:
        with open(proc + "/status", "rb") as f:
            for line in f:
                if line.startswith(b"Mems_allowed_list:"):
                    found["allowed"] = sorted(parse_cpu_list(line.split(b":", 1)[1].decode("ascii")))
                    break
    except (OSError, ValueError):
        pass
    return found


def parse_policy(line):
    """The policy of a numa_maps line ("ADDRESS POLICY ..."): {"policy": its
    mode, "nodes": its nodes or None}. The kernel writes MODE[=FLAGS][:NODES];
    two modes are two words ("weighted interleave", "prefer (many)")."""
    words = line.split()[1:3]
    if len(words) == 2 and (words[0], words[1].split("=")[0].split(":")[0]) in (("weighted", "interleave"),
                                                                                ("prefer", "(many)")):
        words = [" ".join(words)]
    if not words:
        raise ValueError("no policy in %r" % line)
    mode, _, nodes = words[0].partition(":")
    return {"policy": mode.partition("=")[0], "nodes": sorted(parse_cpu_list(nodes)) if nodes else None}


def parse_cpu_list(text):
    """"0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11} (the kernel's list format: CPUs, nodes)."""
    cpus = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


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

    with open("/proc/self/stat", encoding="utf-8", errors="surrogateescape") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    since_boot_ns = int(fields[19]) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    # starttime counts on the boot-time clock, which also runs while suspended.
    return since_boot_ns - (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns())
