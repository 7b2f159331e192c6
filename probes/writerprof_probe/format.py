"""The journal format every probed process writes: the one definition that the
probe writes and writerprof's loader reads.

A process journals into RUN/hosts/HOST/procs/ files named PID-CREATED_NS:
  .events.jsonl  rare events, one JSON object a line, written as they happen;
                 the first line is the process's identity (kind "process").
  .chunks.bin    hot-path calls, fixed-size little-endian records (CHUNK),
                 buffered and appended in batches.
  .shm.bin       its shared-memory mappings (SHM records), and
  .placement.bin its readings of where their pages are (PLACEMENT records):
                 one record each, written as it happens; only in a process
                 that mapped a buffer. Most of a run's rare events are these
                 (four in five): fixed-size records load without a JSON
                 parse or a dict each. One whose values do not fit a record
                 (a name longer than NAME_BYTES, more nodes than NODE_SLOTS)
                 is journaled as its JSON event instead ("shm", "placement"
                 below), as runs of schema 1 have them all; the loader reads
                 both into the same columns.

Every event has "kind" and "t_ns" (CLOCK_MONOTONIC, shared by the processes of
a host); spans also have "start_ns" and "end_ns". The kinds:
  process       identity, first line: schema, pid, ppid, host, argv, executable,
                python, implementation, created_ns (a forked child: the fork; an
                exec'd one: /proc starttime, clock-tick precision), created_via
                ("exec" | "fork"), forked_from, role ("main" | "forkserver" |
                "resource_tracker" | "spawn_child" | "fork_child" |
                "forkserver_child"), wall_ns and mono_ns (one clock anchor), env
                (allow-listed), affinity, memory (policy, nodes, allowed: its
                memory policy and cpuset nodes), rank, local_rank, world_size,
                source
  activated     the probe came up in an exec'd process (span)
  hook          a hook's outcome: spec, status ("applied" | "unavailable" |
                "failed"), reason
  phase         an added phase's code in this process: code, name
  error         a hook failed inside a call and turned itself off: where, error
  process_start a Process.start() (span): method, target, child_pid, name,
                writer_seq (this process's count of writers started), started,
                pickle_ns and pickle_bytes (its reduction.dump calls: the
                child's preparation data and Process; 0 under fork);
                a method other than fork adds the fork event's thread fields
                (the threads a fork would have carried)
  main_rerun    the child re-ran the parent's __main__ (span): path or module;
                in a forkserver daemon that preloads __main__, that preload
  unpickle      the child unpickled its Process, importing the target's module (span)
  bootstrap     the child's Process._bootstrap began: target, name
  target_start, target_end   the target's run() called; _bootstrap returned
  forced_start_method        WRITERPROF_FORCE_START_METHOD acted: forced,
                requested, via, applied (false: reason)
  mitigation    WRITERPROF_MITIGATE acted: name ("pin" | "preload" | "guard" |
                "local" | "first-touch" | an unknown name), applied (false:
                reason); pin and local, in the child: cpus (set before the
                target), inherited (the affinity it had), local's node; local in
                the parent: node, by ("buffers" | "filling thread": the starting
                thread pinned there), cpus; first-touch in the parent: node,
                buffer, cpus (of the touching thread), or writer_cpus when not
                applied; preload, in the parent (where "parent"): method,
                modules (the forkserver's preload list as set), program (the
                list the program had); guard, in a child (where "child") after
                its re-run of __main__: modules (named), deferred (those the
                re-run imported, lazily), loaded (of those, imported by its end)
  fork          os.fork in this process, its threads then (tasks.py):
                native_threads (the kernel's count, /proc/self/task),
                python_threads, threads (Python's names), forking_thread,
                native_only (the names, comm, of the threads no Python
                Thread runs on: a C library's pool), comm (the process's
                own name, which an unnamed thread carries)
  shm           (an SHM record, or this event when it does not fit one)
                a SharedMemory mapped here: op ("create" | "attach" |
                "inherited"), name, size, index, start, end (addresses)
  placement     (a PLACEMENT record, or this event when it does not fit one)
                where a buffer's pages are: name, index, when ("create" |
                "attach" | "unlink" | "end"), source ("move_pages" | "numa_maps"), pages
                (in the range), sampled (pages asked about: every stride-th),
                stride, nodes ({node: pages of the sample}), unfaulted (pages
                of the sample not mapped in this process yet), unreadable
                (pages of the sample move_pages could not read; absent: none)
  pickling      (before exit, where multiprocessing was imported) what
                ForkingPickler.dumps pickled here (queues, pipes, pools):
                pickled_calls, pickled_ns, pickled_bytes
  tracker_call  a register or unregister sent to the resource tracker
                (tracker.py; span): op, rtype, name, tracker (its pipe's inode),
                caller, site, opened ("create" | "attach": SharedMemory's),
                error
  resource_unlink  an unlink and its outcome (span): rtype, name, via
                ("SharedMemory.unlink" | "sem_unlink" | "tracker"), outcome
                ("ok" | the exception's type), errno, caller, site
  tracker_start, tracker_output  in the resource tracker: its pipe (pipe,
                fd); what it printed (via "warning" | "excepthook", category,
                message, name)
  stacks        (before exit, if the probe sampled stacks) samples taken in
                this process, cpu_ns (its sampling thread's CPU time),
                first_start (one of its parent's first FULL_RATE_STARTS writers)
  exit          via ("atexit" | "os._exit"), code, rusage (none where a signal
                killed the process: the probe has no handler)
  agent         this process started its host's sampler agent: started (false:
                reason), pid, python
  journal_stopped  a journal write failed (a full or read-only run directory)
                and the probe stopped journaling in this process; written at
                exit if the disk takes it again: reason, events_dropped (SHM
                and PLACEMENT records count here: they are events),
                records_dropped (chunk records)
"""

import os

# 2: SHM and PLACEMENT records (.shm.bin, .placement.bin); a writerprof of
# schema 1 would miss them, and refuses a run of schema 2.
SCHEMA = 2

# One record per hooked call.
#   phase       code of the phase (PHASES, or a "phase" event for added ones)
#   depth       hooked calls of other phases this call ran inside (0: outermost)
#   cpu         CPU the call ended on (sched_getcpu), -1 when unknown; a thread
#               reads it at most once per CPU_READ_NS, so it may be the CPU of
#               an earlier call's end, up to CPU_READ_NS before this one's
#   buffer      index of the shared-memory buffer the call read or filled
#               (the "index" of its "shm" event in this process), -1 when none
#   writer_seq  index (0, 1, ...) of the writer this process started last
#               before the call (its "process_start" event), -1 before any
#   tid         native thread id
#   start_ns, end_ns  CLOCK_MONOTONIC
#   bytes       bytes written, or the size of the buffer filled; -1 when unknown
#   minflt, majflt    page faults of this thread inside the call (read at
#               its start where the last reading is FAULT_READ_MIN_NS old, and
#               at the end of calls that long or longer; else 0)
CHUNK_FIELDS = (
    ("phase", "u2"), ("depth", "u1"), ("cpu", "i2"), ("buffer", "i4"),
    ("writer_seq", "i4"), ("tid", "u4"), ("start_ns", "i8"), ("end_ns", "i8"),
    ("bytes", "i8"), ("minflt", "i4"), ("majflt", "i4"),
)
CHUNK_FORMAT = "<HBhiiIqqqii"  # CHUNK, a struct.Struct made when first used (below)
# Chunk records are appended in batches: at a thread's CPU reading (below)
# once FLUSH_RECORDS are queued or FLUSH_NS after the last batch (asked there,
# not per record: the hot path), and at exit and fork. A process a signal
# kills (the probe has no handler: lifecycle.py) loses the records since the
# last batch: FLUSH_RECORDS at most, and those of the CPU_READ_NS until a
# thread's next reading.
FLUSH_RECORDS = 512
FLUSH_NS = 1_000_000_000

FAULT_READ_MIN_NS = 50_000  # a read costs ~1 us: only where it is small beside the call
# A thread reads its CPU (sched_getcpu) at most this often: a CHUNK record's
# cpu is the reading at its end or one up to this long before.
CPU_READ_NS = 100_000

# Built-in phase codes; a spec may name any other phase, which then gets the
# next free code and a {"kind": "phase"} event.
PHASES = {
    "gen": 1, "put": 2, "get": 3, "write": 4, "fadvise": 5, "fsync": 6,
    "close": 7, "save": 8, "producer": 9, "writer": 10,
}
FIRST_ADDED_PHASE = 32

# The multiprocessing start methods a writer may be started with ("method" of
# a "process_start" event).
START_METHODS = ("fork", "forkserver", "spawn")

# One record per SharedMemory mapped (create, attach, or inherited across a
# fork), the fields of its "shm" event:
#   t_ns        when it was journaled (CLOCK_MONOTONIC)
#   op          SHM_OPS code
#   index       this process's number for the buffer (CHUNK's buffer)
#   size        bytes; start, end: the mapping's addresses here
#   name        the segment's name, UTF-8, NUL-padded to NAME_BYTES
SHM_FIELDS = (
    ("t_ns", "i8"), ("op", "u1"), ("index", "i4"), ("size", "i8"), ("start", "u8"), ("end", "u8"),
    ("name", "S64"),
)
SHM_FORMAT = "<qBiqQQ64s"
# One record per placement reading, the fields of its "placement" event:
#   when, source   PLACEMENT_WHENS, PLACEMENT_SOURCES codes
#   pages, sampled, stride, unfaulted, unreadable (0: none)   as the event's
#   nodes       how many of the NODE_SLOTS (node, node_pages) slots are the
#               event's nodes dict, in its order; the rest are 0
PLACEMENT_FIELDS = (
    ("t_ns", "i8"), ("index", "i4"), ("when", "u1"), ("source", "u1"), ("nodes", "u1"), ("pages", "i8"),
    ("sampled", "i8"), ("stride", "i8"), ("unfaulted", "i8"), ("unreadable", "i8"), ("name", "S64"),
    ("node", "8u2"), ("node_pages", "8i8"),
)
PLACEMENT_FORMAT = "<qiBBBqqqqq64s8H8q"
NAME_BYTES = 64
NODE_SLOTS = 8
# Codes of the strings (0: none, for a JSON event without the field).
SHM_OPS = {"create": 1, "attach": 2, "inherited": 3}
PLACEMENT_WHENS = {"create": 1, "attach": 2, "unlink": 3, "end": 4}
PLACEMENT_SOURCES = {"move_pages": 1, "numa_maps": 2}

EVENTS_SUFFIX = ".events.jsonl"
CHUNKS_SUFFIX = ".chunks.bin"
SHM_SUFFIX = ".shm.bin"
PLACEMENT_SUFFIX = ".placement.bin"
STACKS_SUFFIX = ".stacks.txt"  # the probe's stack samples (stacks.py): "frame;...;frame COUNT" lines
STARTS_SUFFIX = ".starts"  # in stacks/: PPID.starts, a byte per child that parent started (stacks.py)
# A stack line's root frame, its thread, as py-spy --threads writes it:
# "thread (TID): NAME" (the kernel's thread id; "thread (TID)" while Python
# has no name for it). The loader (writerprof.run.stacks) reads it.
THREAD_FRAME = "thread (%s): %s"
# The file name of the code the probe compiles itself (calls.py: its timing
# wrappers and their inlined parts) begins so: a name no file of the target
# has, by which a stack's reader tells those frames for the probe's
# (writerprof.run.stacks.is_probe_frame).
COMPILED_FILE_PREFIX = "<writerprof_probe "
RECORD_SUFFIXES = {"shm": SHM_SUFFIX, "placement": PLACEMENT_SUFFIX}  # event kind -> its records' file

HOSTS_DIR = "hosts"
PROCS_DIR = "procs"
# Python stacks: the probe's PID-CREATED.stacks.txt (not in procs/, whose
# listing record's sampler watches for new journals), py-spy's files.
STACKS_DIR = "stacks"
# A parent's writers re-run the same start-up: the first this many of each
# parent have theirs sampled at the full rate, the rest at the sparse rate
# (the probe's stacks.py, and record's py-spys: writerprof.record.stackrate).
FULL_RATE_STARTS = 2
# Their full rate lasts until their target has run this long (its first
# save's calls) or, for a process that journals no target start, until this
# long after its own start (longer than a start-up on a loaded machine here,
# 0.4-1.5 s; short beside a run's life).
FULL_RATE_HEAD_NS = 500_000_000
FULL_RATE_CAP_NS = 3_000_000_000


# The probe's environment, read in every probed process; writerprof imports
# these names from here. RUN_ENV names the run directory (the probe is inert
# without it); the others are set by `record` and `contrast`.
RUN_ENV = "WRITERPROF_RUN"
FORCE_ENV = "WRITERPROF_FORCE_START_METHOD"
MITIGATE_ENV = "WRITERPROF_MITIGATE"  # comma-separated mitigation names (mitigate.py)
PRELOAD_ENV = "WRITERPROF_PRELOAD"  # the preload mitigation's list, comma-separated
DEFER_ENV = "WRITERPROF_DEFER"  # the modules whose imports the guard mitigation defers, comma-separated
PROBES_ENV = "WRITERPROF_PROBES"  # added hook specs, one per line
STACKS_ENV = "WRITERPROF_STACKS"  # "FULL,SPARSE,DAEMON" Hz: the probe samples its process's stacks (stacks.py)
# The comm (thread name) of the probe's stack-sampling thread: its CPU time is
# not the target's work (writerprof.analysis.threads leaves it out).
STACKS_THREAD = "writerprof-stk"

# Overrides the host name a process files itself under: to tell apart
# containers that share a host name, or to test many hosts on one machine.
HOST_ENV = "WRITERPROF_HOST"
# Set by `writerprof record` for the probe: the launcher's host (whose
# processes its own sampler follows), and the interpreter, interval and
# stall time (record --stall, 0: none) with which the first probed process
# on any other host starts that host's sampler agent (python -m
# writerprof.record.agent).
LAUNCH_HOST_ENV = "WRITERPROF_LAUNCH_HOST"
AGENT_PYTHON_ENV = "WRITERPROF_AGENT_PYTHON"
INTERVAL_ENV = "WRITERPROF_INTERVAL_NS"
STALL_ENV = "WRITERPROF_STALL_NS"
AGENT_LOCK = "agent.lock"  # in RUN/hosts/HOST/: who started that host's agent, and the agent (agent.py)
# The recording's id (run.json's run_id), which every host's part carries
# from its making (RUN/hosts/HOST/run_id: part.py): a part says whose it is
# (writerprof merge checks), and another recording's part found there is
# moved aside to RUN/previous/ID/ before this one's is made.
RUN_ID_ENV = "WRITERPROF_RUN_ID"
RUN_ID_FILE = "run_id"
PREVIOUS_DIR = "previous"
# Set by `writerprof record` where CMD may start ranks on other hosts: where
# a host's agent sends its part home ("ADDRESS:PORT,[ADDRESS6]:PORT,..."),
# and the recording's secret that proves it is this recording's agent (hex;
# never in argv or a file of the run: identity records no variable named
# *KEY*). The process that starts a host's agent hands both on to it
# (writerprof.record.homecoming).
HOMECOMING_ENV = "WRITERPROF_HOMECOMING"
HOMECOMING_KEY_ENV = "WRITERPROF_HOMECOMING_KEY"
# In the agent's environment only: the descriptors of the connections to
# those addresses that its starter began for it ("FD,FD,...": agent.py).
HOMECOMING_FDS_ENV = "WRITERPROF_HOMECOMING_FDS"


_FORMATS = {"CHUNK": CHUNK_FORMAT, "SHM": SHM_FORMAT, "PLACEMENT": PLACEMENT_FORMAT}


def __getattr__(name):
    """CHUNK, SHM, PLACEMENT, made on first use: struct costs start-up, and
    only a process that records calls (maps buffers) needs them."""
    if name in _FORMATS:
        return _struct(name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def _struct(name):
    made = globals().get(name)
    if made is None:
        import struct

        made = globals()[name] = struct.Struct(_FORMATS[name])
    return made


_SHM_KEYS = frozenset(("op", "name", "size", "index", "start", "end"))
_PLACEMENT_KEYS = frozenset(("name", "index", "when", "source", "pages", "sampled", "stride", "nodes",
                             "unfaulted"))


def record(kind, t_ns, fields):
    """The SHM or PLACEMENT record of a "shm" or "placement" event's fields,
    or None when they do not fit one (then the event is journaled as JSON,
    which loses nothing): a name longer than NAME_BYTES (or with a NUL),
    more nodes than NODE_SLOTS, a string without a code, a field unknown or
    missing, a value out of its field's range."""
    try:
        name = fields["name"].encode()
        if len(name) > NAME_BYTES or b"\0" in name:
            return None
        if kind == "shm":
            numbers = (fields["index"], fields["size"], fields["start"], fields["end"])
            if fields.keys() != _SHM_KEYS or not all(type(v) is int and v >= 0 for v in numbers):
                return None
            return _struct("SHM").pack(t_ns, SHM_OPS[fields["op"]], *numbers, name)
        nodes = fields["nodes"]
        unreadable = fields.get("unreadable", 0)
        numbers = (fields["index"], fields["pages"], fields["sampled"], fields["stride"], fields["unfaulted"],
                   unreadable, *nodes.values())
        if (not _PLACEMENT_KEYS <= fields.keys() <= _PLACEMENT_KEYS | {"unreadable"} or len(nodes) > NODE_SLOTS
                or not all(type(v) is int and v >= 0 for v in numbers)
                or not all(type(k) is str and k.isdigit() and str(int(k)) == k for k in nodes)):
            return None
        pad = (0,) * (NODE_SLOTS - len(nodes))
        return _struct("PLACEMENT").pack(
            t_ns, fields["index"], PLACEMENT_WHENS[fields["when"]], PLACEMENT_SOURCES[fields["source"]],
            len(nodes), *numbers[1:6], name, *map(int, nodes), *pad, *nodes.values(), *pad)
    except Exception:  # struct.error (out of range), KeyError (no code), a str that is not one...
        return None


_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def host_name():
    """The name a host's processes are filed under."""
    return os.environ.get(HOST_ENV) or os.uname().nodename


def safe_host(host):
    """A host name usable as one path component."""
    # Not re: the probe does not import it (start-up, see jsonline.py).
    return "".join(c if c in _SAFE else "_" for c in host) or "localhost"


def procs_dir(run, host):
    return os.path.join(run, HOSTS_DIR, safe_host(host), PROCS_DIR)


def stacks_dir(run, host):
    return os.path.join(run, HOSTS_DIR, safe_host(host), STACKS_DIR)
