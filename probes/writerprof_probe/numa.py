"""Where a mapping's pages are: move_pages(2) asked for nodes only, or the
process's numa_maps line. Shared by the probe (its own buffers) and
writerprof's sampler (other processes' numa_maps)."""

import array
import os

from .identity import parse_cpu_list

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

# move_pages(2) by architecture; elsewhere the numa_maps fallback is used.
_MOVE_PAGES = {"x86_64": 279, "aarch64": 239, "ppc64le": 301, "s390x": 310, "riscv64": 239}
_ENOENT = 2  # status of a page not present in this process's page table

_libc = None


def _syscall():
    global _libc
    if _libc is None:
        import ctypes  # here, not at start-up: only processes with buffers need it

        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc.syscall


def parse_numa_maps_line(line):
    """One /proc/PID/numa_maps line -> dict: address, policy, file (or None),
    pages ({node: count} of pages mapped in that process), page_size, huge,
    and the other key=value counters as ints."""
    tokens = line.split()
    entry = {"address": int(tokens[0], 16), "policy": tokens[1], "file": None,
             "pages": {}, "page_size": PAGE_SIZE, "huge": False}
    for token in tokens[2:]:
        key, sep, value = token.partition("=")
        if not sep:
            if key == "huge":
                entry["huge"] = True
            else:
                entry[key] = True  # heap, stack
        elif key == "file":
            entry["file"] = value
        elif key[:1] == "N" and key[1:].isdigit():
            entry["pages"][int(key[1:])] = int(value)
        elif key == "kernelpagesize_kB":
            entry["page_size"] = int(value) * 1024
        elif value.isdigit():
            entry[key] = int(value)
    return entry


# move_pages costs the kernel ~0.2 us a page (1.6 ms for a 32 MiB buffer):
# beyond this many pages, every k-th page is asked for.
MAX_SAMPLED_PAGES = 1024
_MIN_STRIDE = 17


def sample_stride(pages):
    """1 for up to MAX_SAMPLED_PAGES pages; beyond, the smallest prime k of at
    least 17 that keeps the sample within it. A prime above 16, so that pages
    interleaved round-robin over up to 16 nodes are not aliased onto one."""
    if pages <= MAX_SAMPLED_PAGES:
        return 1
    stride = max(-(-pages // MAX_SAMPLED_PAGES), _MIN_STRIDE)
    while any(stride % d == 0 for d in range(2, int(stride ** 0.5) + 1)):
        stride += 1
    return stride


def placement_from_numa_maps(start, end, numa_maps_text):
    """Node counts of the mapping at `start` from a numa_maps text (all pages)."""
    for line in numa_maps_text.splitlines():
        if line.startswith(format(start, "x") + " "):
            entry = parse_numa_maps_line(line)
            pages = (end - start) // entry["page_size"]
            present = sum(entry["pages"].values())
            return {"source": "numa_maps", "pages": pages, "sampled": pages, "stride": 1,
                    "nodes": {str(n): c for n, c in sorted(entry["pages"].items())},
                    "unfaulted": max(0, pages - present)}
    return None


def placement_from_move_pages(start, end):
    """Node of every page of [start, end) in this process (every k-th page
    of a large range, sample_stride), or None where move_pages is
    unavailable. Pages not yet faulted in here count apart."""
    import ctypes

    number = _MOVE_PAGES.get(os.uname().machine)
    if number is None:
        return None
    total = (end - start) // PAGE_SIZE
    if total <= 0:
        return None
    stride = sample_stride(total)
    pages = array.array("Q", range(start, end, PAGE_SIZE * stride))
    count = len(pages)
    status = array.array("i", bytes(4 * count))
    # nodes == NULL: report where each page is, move nothing.
    result = _syscall()(number, 0, ctypes.c_ulong(count),
                        (ctypes.c_uint64 * count).from_buffer(pages), None,
                        (ctypes.c_int * count).from_buffer(status), 0)
    if result != 0:
        return None
    nodes, unfaulted, other = {}, 0, 0
    for value in set(status):  # a few distinct values: count each at C speed
        n = status.count(value)
        if value >= 0:
            nodes[value] = n
        elif value == -_ENOENT:
            unfaulted += n
        else:
            other += n
    result = {"source": "move_pages", "pages": total, "sampled": count, "stride": stride,
              "nodes": {str(n): c for n, c in sorted(nodes.items())}, "unfaulted": unfaulted}
    if other:
        result["unreadable"] = other
    return result


def placement(start, end, pid="self"):
    """Placement of [start, end) in this process: move_pages, else numa_maps."""
    found = placement_from_move_pages(start, end) if pid == "self" else None
    if found is None:
        try:
            with open("/proc/%s/numa_maps" % pid, encoding="utf-8", errors="surrogateescape") as f:
                found = placement_from_numa_maps(start, end, f.read())
        except OSError:
            found = None
    return found


# The machine's nodes and the CPUs of each, for the placement what-ifs (mitigate.py).

_NODE_DIR = "/sys/devices/system/node"


def node_cpus(root=_NODE_DIR):
    """{node: set of its CPUs} of the online nodes with CPUs; {} without
    NUMA in the kernel (one node, as far as placement goes)."""
    try:
        with open(root + "/online", encoding="utf-8", errors="surrogateescape") as f:
            nodes = parse_cpu_list(f.read())
    except (OSError, ValueError):
        return {}
    out = {}
    for node in sorted(nodes):
        try:
            with open("%s/node%d/cpulist" % (root, node), encoding="utf-8", errors="surrogateescape") as f:
                cpus = parse_cpu_list(f.read())
        except (OSError, ValueError):
            continue
        if cpus:
            out[node] = cpus
    return out


def nodes_of(cpus, nodes):
    """The nodes (of node_cpus()) that hold any of cpus, in order."""
    return [node for node, held in sorted(nodes.items()) if held & set(cpus)]


def current_cpu():
    """The CPU the calling thread last ran on (/proc/thread-self/stat, field 39), or None."""
    try:
        with open("/proc/thread-self/stat", encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
        return int(text[text.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def dominant_node(found):
    """The node holding most of a placement's pages (move_pages or numa_maps), or None."""
    nodes = (found or {}).get("nodes") or {}
    if not nodes:
        return None
    return int(max(nodes.items(), key=lambda item: item[1])[0])
