"""The timeline model: a small deterministic discrete model of the
reproducer's pipeline that decides when each thing of a save happens, for
every rank of a host at once (arrays over the ranks, and over the chunks).

Per rank, a save creates `buffers` shared-memory buffers, starts one writer
(with the start-up its method has), fills a buffer per chunk (gen) and queues
it (put, blocked while `buffers` chunks are queued); the writer attaches the
buffers, takes each chunk (get, blocked while none is queued), writes it,
fsyncs, closes and leaves; the producer joins it and cleans up. Times are
nanoseconds on the host's CLOCK_MONOTONIC."""

from __future__ import annotations

import numpy as np

US, MS, S = 1_000, 1_000_000, 1_000_000_000
# The pipeline's own machinery, measured on the reproducer; not knobs.
LAUNCH_NS = 20 * MS  # recording start to a rank's exec
INTERPRETER_NS = 40 * MS  # exec to the probe's first line
ACTIVATE_NS = 20 * MS  # the probe's own start-up
IMPORTS_NS = 150 * MS  # activation to the first save (the reproducer's imports)
TRACKER_LAUNCH_NS = 5 * MS  # the first SharedMemory starts the resource tracker
FORKSERVER_LAUNCH_NS = 65 * MS  # the first forkserver start() starts the daemon
SHM_CREATE_NS, PLACEMENT_NS = 350 * US, 150 * US
PUT_MIN_NS, GET_MIN_NS = 40 * US, 50 * US  # an unblocked put / get
QUEUE_LATENCY_NS = 80 * US  # put returned -> the item readable in the writer
WAKE_NS = 60 * US  # a get freed a slot -> the blocked put returns
GAP_NS = 50 * US  # between consecutive hooked calls of a thread
CLOSE_NS = 15 * US
CLEANUP_PLACEMENT_NS = 1 * MS  # the producer's unlink + close + move_pages, per buffer
BETWEEN_SAVES_NS = 20 * MS  # results printed, file removed
EXIT_AFTER_NS = 30 * MS  # last save -> the producer's exit; its daemons follow
DEFAULT_START_S = {"fork": 0.002, "forkserver": 0.0015, "spawn": 0.004}


def ns(seconds: float) -> int:
    return int(round(seconds * S))


def save_timeline(host, save: int, t_b: np.ndarray) -> dict:
    """The timeline of one save of every rank of `host`, which begin it at
    t_b: a dict of its moments and choices, arrays with a row per rank (in
    host.ranks' order; a column per chunk or buffer where there are many)."""
    params = [rank.save_scenario(save) for rank in host.ranks]
    v = dict(save=save, t_b=t_b, params=params)
    remote = _placement(host, v)
    gen_dur, write_dur = _durations(host, v, remote)
    _startup(host, v)
    _pipeline(v, gen_dur, write_dur, host.sc.buffers)
    _teardown(host, v)
    return v


def _col(params, name, scale=S):
    """A setting of every rank's save, in ns (or scaled)."""
    return np.array([round(getattr(p, name) * scale) for p in params], dtype=np.int64)


def _fcol(params, name):
    return np.array([getattr(p, name) for p in params], dtype=float)


def _placement(host, v: dict) -> np.ndarray:
    """Where each writer runs: before its target pins it, and per chunk
    after. Returns which writes copy from buffers on another node."""
    m, save, params = host.machine, v["save"], v["params"]
    R, n = len(host.ranks), host.sc.chunks_per_save
    method = host.sc.start_method
    producer_cpu, start_cpu = np.empty(R, np.int64), np.empty(R, np.int64)
    chunk_cpu = np.empty((R, n + 1), np.int64)
    masks = []
    for i, (rank, p) in enumerate(zip(host.ranks, params)):
        what = f"rank {rank.rank} save {save}"
        m.on_node(m.online, p.buffer_node, f"{what}: buffer_node")
        inherited = rank.daemon_mask if method == "forkserver" else rank.producer_mask
        mask = m.mask(p.writer_cpus, f"{what}: writer_cpus") if p.writer_cpus is not None else inherited
        run_node = p.writer_run_node
        if run_node is None:
            run_node = p.buffer_node if any(m.node_of.get(c) == p.buffer_node for c in mask) \
                else m.node_of[mask[0]]
        run = m.on_node(mask, run_node, f"{what}: writer_run_node")
        cpu = run[(2 * rank.local + 1) % len(run)]
        chunk_cpu[i] = cpu
        if p.migrate_to_node is not None:
            moved = m.on_node(mask, p.migrate_to_node, f"{what}: migrate_to_node")
            chunk_cpu[i, n // 2:] = moved[(2 * rank.local + 1) % len(moved)]
        producer_cpu[i] = m.pick(rank.producer_mask, p.buffer_node, 2 * rank.local)
        start_cpu[i] = m.pick(inherited, run_node, 2 * rank.local + 1)
        masks.append((inherited, mask))
    v.update(producer_cpu=producer_cpu, start_cpu=start_cpu, chunk_cpu=chunk_cpu, masks=masks)
    node_of = np.vectorize(m.node_of.get, otypes=[np.int64])
    return node_of(chunk_cpu[:, :n]) != _col(params, "buffer_node", 1)[:, None]


def _durations(host, v: dict, remote: np.ndarray):
    """How long each gen and write takes, with its faults (a buffer's first
    chunk of the save faults its pages in), its spread and its node."""
    sc, params = host.sc, v["params"]
    R, n, B, pages = len(host.ranks), sc.chunks_per_save, sc.buffers, host.buffers.pages
    rng = np.random.default_rng([sc.seed, host.index, v["save"]])
    jitter = _fcol(params, "jitter")[:, None] if any(p.jitter for p in params) else None

    def spread():
        if jitter is None:
            return 1.0
        return np.exp(rng.normal(0.0, 1.0, (R, n)) * jitter - jitter ** 2 / 2)

    fault_ns = _fcol(params, "fault_s") * S  # per fault, fractional
    first_pass = np.arange(n) < B
    gen_faults = np.where(first_pass, pages, 0)[None, :].repeat(R, 0)
    write_faults = np.where(first_pass, pages // 16, 0)[None, :] + _col(params, "faults_per_chunk", 1)[:, None]
    gen_dur = (_col(params, "gen_s")[:, None] * spread() + gen_faults * fault_ns[:, None]).astype(np.int64)
    write_factor = np.where(remote, _fcol(params, "remote_factor")[:, None], 1.0)
    # The save's storage factor (save_jitter), from its own generator: runs without it keep their numbers.
    sigma = _fcol(params, "save_jitter")
    storage = np.exp(np.random.default_rng([sc.seed, host.index, v["save"], 1]).normal(0.0, 1.0, R) * sigma
                     - sigma ** 2 / 2)
    v["storage"] = storage
    write_factor = write_factor * storage[:, None]
    write_dur = (_col(params, "write_s")[:, None] * spread() * write_factor
                 + write_faults * fault_ns[:, None]).astype(np.int64)
    v.update(fault_ns=fault_ns, gen_faults=gen_faults, write_faults=write_faults,
             first_pages=np.where(first_pass, pages, 0)[None, :].repeat(R, 0))
    return np.maximum(gen_dur, 1 * US), np.maximum(write_dur, 1 * US)


def _startup(host, v: dict):
    """The buffers' creation, Process.start() and the writer's start-up to
    its first get (ready): what each start method does in the child."""
    sc, params, t_b = host.sc, v["params"], v["t_b"]
    B, method, first = sc.buffers, sc.start_method, v["save"] == 0
    begin_create = t_b + 200 * US + (TRACKER_LAUNCH_NS if first else 0)
    shm_t = begin_create[:, None] + np.arange(B) * SHM_CREATE_NS
    place_t = shm_t + PLACEMENT_NS
    t_ps = place_t[:, -1] + 400 * US
    start_ns = np.array([ns(p.start_s if p.start_s is not None else DEFAULT_START_S[method])
                         for p in params], dtype=np.int64)
    start_dur = start_ns + (FORKSERVER_LAUNCH_NS if method == "forkserver" and first else 0)
    ps_end = t_ps + start_dur
    fork_at = ps_end - start_ns // 2
    v.update(shm_t=shm_t, place_t=place_t, t_ps=t_ps, ps_end=ps_end, fork_at=fork_at)
    if method == "fork":
        created = fork_at + 300 * US
        v["boot"] = created + 1400 * US
        v["ts"] = v["boot"] + 400 * US
    else:
        if method == "forkserver":
            created = fork_at + 900 * US
            v["mr_s"] = created + 2 * MS
        else:
            v["exec"] = t_ps + start_dur // 2
            created = np.array([host.sampler.tick_round(int(t)) for t in v["exec"]], dtype=np.int64)
            v["ident"] = v["exec"] + INTERPRETER_NS + 10 * MS
            v["mr_s"] = v["ident"] + ACTIVATE_NS + 15 * MS
        v["mr_e"] = v["mr_s"] + _col(params, "main_rerun_s")
        v["up_s"] = v["mr_e"] + 50 * US
        v["up_e"] = v["up_s"] + _col(params, "unpickle_s")
        v["boot"] = v["up_e"]
        v["ts"] = v["boot"] + 200 * US
    v["created"] = created
    setup = np.maximum(_col(params, "target_setup_s"), 500 * US)
    spacing = setup // (B + 2)
    v["attach_t"] = v["ts"][:, None] + (np.arange(B) + 1) * spacing[:, None]
    v["attach_place_t"] = v["attach_t"] + spacing[:, None] * 2 // 5
    v["ready"] = v["ts"] + setup


def _pipeline(v: dict, gen_dur: np.ndarray, write_dur: np.ndarray, B: int):
    """The chunks through the queue: put c waits for get c-B to free a slot,
    get c for put c; the last put (c = n) is the end marker."""
    R, n = gen_dur.shape
    gs = np.empty((R, n), np.int64)
    ge, ws, we = np.empty_like(gs), np.empty_like(gs), np.empty_like(gs)
    ps, pe = np.empty((R, n + 1), np.int64), np.empty((R, n + 1), np.int64)
    gts, gte = np.empty_like(ps), np.empty_like(ps)
    t, wt = v["ps_end"] + 100 * US, v["ready"]
    for c in range(n + 1):
        if c < n:
            gs[:, c] = t
            ge[:, c] = t + gen_dur[:, c]
            t = ge[:, c] + GAP_NS
        ps[:, c] = t
        end = t + PUT_MIN_NS
        if c >= B:
            end = np.maximum(end, gte[:, c - B] + WAKE_NS)
        pe[:, c] = end
        gts[:, c] = wt
        gte[:, c] = np.maximum(wt + GET_MIN_NS, end + QUEUE_LATENCY_NS)
        if c < n:
            ws[:, c] = gte[:, c] + GAP_NS
            we[:, c] = ws[:, c] + write_dur[:, c]
            wt = we[:, c] + GAP_NS
        t = end + GAP_NS
    v.update(gs=gs, ge=ge, ps=ps, pe=pe, gts=gts, gte=gte, ws=ws, we=we)


def _teardown(host, v: dict):
    """fsync, close, the writer's exit, the producer's join and cleanup."""
    sc = host.sc
    n, B = sc.chunks_per_save, sc.buffers
    fs = v["gte"][:, n] + 20 * US
    fe = fs + (_col(v["params"], "fsync_s") * v["storage"]).astype(np.int64)
    cs = fe + 70 * US
    ce = cs + CLOSE_NS
    wend = ce[:, None] + 150 * US + np.arange(B) * 300 * US
    inherited_end = wend[:, -1:] + 100 * US + np.arange(B) * 100 * US
    w_exit = (inherited_end[:, -1] if sc.start_method == "fork" else wend[:, -1]) + 150 * US
    recv = np.maximum(v["pe"][:, n], w_exit - 100 * US) + 80 * US
    join = np.maximum(recv, w_exit + 200 * US)
    cleanup = join[:, None] + 300 * US + np.arange(B) * CLEANUP_PLACEMENT_NS
    v.update(fs=fs, fe=fe, cs=cs, ce=ce, wend=wend, inherited_end=inherited_end, w_exit=w_exit, join=join,
             cleanup=cleanup, cleaned=cleanup[:, -1], save_end=cleanup[:, -1] + 300 * US,
             written=n * sc.chunk_size)
