"""The engine's own KV blocks, from the KV cache events vLLM publishes (issue 34): what it stored and removed.

vLLM started with `--enable-prefix-caching --kv-events-config '{"enable_kv_cache_events": true, "publisher":
"zmq", "endpoint": "tcp://HOST:PORT", "topic": "kv"}'` sends each batch of events as a ZMQ multipart message
(topic, an 8-byte big-endian sequence number, a msgspec msgpack payload: vllm/distributed/kv_events.py,
ZmqEventPublisher). Its endpoint is not a wildcard, so the engine CONNECTS to it: the app's SUB socket BINDS the
operator's address (--engine-kv-events in app.py; never from a page). ZMQ reconnects, and what is sent before the
socket is bound is lost.

The payload is decoded into Structs mirroring vLLM's (KVEventBatch: [ts, events, data-parallel rank]; events
tagged BlockStored, BlockRemoved, AllBlocksCleared), not into generic objects: one typed decode checks the shape
(a foreign or broken message is counted and skipped, never half read), and fields a newer vLLM adds are ignored.
vLLM itself is not imported (it lives in its own venv).

A BlockStored lists consecutive full blocks: `block_hashes` in order, the parent of the first, and the token ids of
all of them (block_size each). A block's hash covers its parent's hash and its tokens, so a hash names a whole
prefix; two texts that begin alike share their first blocks' hashes.

EngineBlocks keeps a bounded record (every block stored, removed, in order, with times) and the blocks it knows
(live or removed); snapshot() gives a plain copy: the live blocks as a prefix tree, each session's chain of blocks
holding its prefix (full blocks only, matched by their token ids against the text), and which blocks sessions share.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

import msgspec

from model.speed.paged import block_hashes

log = logging.getLogger(__name__)
RECORD_SIZE = 4096  # events kept in order (stored, removed, cleared); older ones fall off
MAX_BLOCKS = 16384  # blocks known (live and removed); past it, the longest-removed are forgotten
POLL_MS = 200  # the receiving thread looks at its stop flag this often
SHORT_HEX = 8  # the hex digits a block is drawn with


# ---- vLLM's messages, mirrored (vllm/distributed/kv_events.py): only the fields read here ---------------------
class BlockStored(msgspec.Struct, tag=True):
    block_hashes: list[bytes | int]  # bytes, or 64-bit ints under VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES
    parent_block_hash: bytes | int | None
    token_ids: list[int]
    block_size: int


class BlockRemoved(msgspec.Struct, tag=True):
    block_hashes: list[bytes | int]


class AllBlocksCleared(msgspec.Struct, tag=True):
    pass


class KVEventBatch(msgspec.Struct, array_like=True):
    ts: float
    events: list[BlockStored | BlockRemoved | AllBlocksCleared]
    data_parallel_rank: int | None = None


_DECODER = msgspec.msgpack.Decoder(KVEventBatch)


def block_hex(h: bytes | int | None) -> str | None:
    """A block hash as hex: bytes as they are, an int as 16 digits (vLLM's int form keeps the low 64 bits)."""
    if h is None:
        return None
    return h.hex() if isinstance(h, bytes) else f"{h & (1 << 64) - 1:016x}"


# ---- plain records -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EngineEvent:
    """One entry of the record: a block stored ("stored": its parent, tokens and size) or removed ("removed"), or
    every block cleared ("cleared", no hash). ts: the engine's time of its batch; seq: the batch's number."""

    kind: str
    hash: str | None
    ts: float
    seq: int
    parent: str | None = None
    token_ids: tuple[int, ...] = ()
    block_size: int = 0


@dataclass
class EngineBlock:
    """A block the engine stored: its hash, its parent's (None for a first block), its token ids, when it was stored
    and, once removed, when (None while it is live)."""

    hash: str
    parent: str | None
    token_ids: tuple[int, ...]
    stored_ts: float
    removed_ts: float | None = None

    @property
    def live(self) -> bool:
        return self.removed_ts is None


@dataclass
class EngineChain:
    """The engine blocks holding one text's prefix, first block first: a full block of the text matched when the
    engine stored a block with those token ids under the previous one. removed[i]: block i was removed since."""

    hashes: list[str]
    removed: list[bool]
    full_blocks: int  # the text's full blocks (at the engine's block size): the chain is at most that long


@dataclass
class EngineSnapshot:
    """What the events said, at one moment: a plain copy (no lock held by its reader).

    heard: whether any event batch arrived; block_size: the engine's (None until a block was stored); blocks: every
    block known by hash; children: the live prefix tree (parent hash, None for the roots -> child hashes, in order
    stored); events: the record, oldest first; counts: batches, stored, removed, cleared, skipped (undecodable),
    lost (sequence numbers missed).
    """

    heard: bool
    block_size: int | None
    blocks: dict[str, EngineBlock]
    children: dict[str | None, list[str]]
    events: list[EngineEvent]
    counts: dict[str, int]

    def chain(self, ids: Sequence[int]) -> EngineChain:
        """The chain of engine blocks holding the prefix of `ids` (full blocks only), live or removed."""
        size = self.block_size
        if not size:
            return EngineChain([], [], 0)
        by_content = {(b.parent, b.token_ids): b for b in self.blocks.values()}
        hashes, removed, parent = [], [], None
        full = len(ids) // size
        for i in range(full):
            block = by_content.get((parent, tuple(int(t) for t in ids[i * size:(i + 1) * size])))
            if block is None:
                break
            hashes.append(block.hash)
            removed.append(not block.live)
            parent = block.hash
        return EngineChain(hashes, removed, full)

    def live_count(self) -> int:
        """The blocks the engine holds now, of those the events named."""
        return sum(b.live for b in self.blocks.values())


def shared_blocks(chains: Sequence[Sequence[str]]) -> set[str]:
    """The keys (block hashes) that two or more of the chains list."""
    seen: dict[str, int] = {}
    for chain in chains:
        for key in set(chain):
            seen[key] = seen.get(key, 0) + 1
    return {key for key, n in seen.items() if n > 1}


# ---- the record ----------------------------------------------------------------------------------------------
class EngineBlocks:
    """The engine's blocks as its events tell them. feed() takes one message's sequence number and payload (the
    receiving thread calls it; a test may too); snapshot() copies what is known. Thread-safe."""

    def __init__(self, record_size: int = RECORD_SIZE, max_blocks: int = MAX_BLOCKS):
        self._lock = threading.Lock()
        self._events: deque[EngineEvent] = deque(maxlen=record_size)
        self._blocks: dict[str, EngineBlock] = {}
        self._max_blocks = max_blocks
        self._block_size: int | None = None
        self._last_seq: int | None = None
        self.counts = {"batches": 0, "stored": 0, "removed": 0, "cleared": 0, "skipped": 0, "lost": 0}

    def skip(self) -> None:
        """Count a message that is not a KV event batch (it is dropped)."""
        with self._lock:
            self.counts["skipped"] += 1

    def feed(self, seq: int, payload: bytes) -> None:
        """Record one batch: its blocks stored and removed, in order; a payload that is not one is skipped."""
        try:
            batch = _DECODER.decode(payload)
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            self.skip()
            log.warning("KV event batch %d not understood: %s", seq, err)
            return
        with self._lock:
            self.counts["batches"] += 1
            if self._last_seq is not None and seq > self._last_seq + 1:
                self.counts["lost"] += seq - self._last_seq - 1
            self._last_seq = seq
            for event in batch.events:
                if isinstance(event, BlockStored):
                    self._stored(event, batch.ts, seq)
                elif isinstance(event, BlockRemoved):
                    for h in event.block_hashes:
                        key = block_hex(h)
                        self.counts["removed"] += 1
                        self._events.append(EngineEvent("removed", key, batch.ts, seq))
                        if key in self._blocks:
                            self._blocks[key].removed_ts = batch.ts
                else:
                    self.counts["cleared"] += 1
                    self._events.append(EngineEvent("cleared", None, batch.ts, seq))
                    for block in self._blocks.values():
                        if block.live:
                            block.removed_ts = batch.ts
            self._forget()

    def _stored(self, event: BlockStored, ts: float, seq: int) -> None:
        size = event.block_size
        self._block_size = size
        parent = block_hex(event.parent_block_hash)
        for i, h in enumerate(event.block_hashes):
            key = block_hex(h)
            tokens = tuple(event.token_ids[i * size:(i + 1) * size])
            self.counts["stored"] += 1
            self._events.append(EngineEvent("stored", key, ts, seq, parent, tokens, size))
            self._blocks.pop(key, None)  # stored again: newest last, live
            self._blocks[key] = EngineBlock(key, parent, tokens, ts)
            parent = key

    def _forget(self) -> None:
        """Past max_blocks, forget removed blocks, longest removed first (the live ones are the engine's cache)."""
        over = len(self._blocks) - self._max_blocks
        if over > 0:
            gone = sorted((b for b in self._blocks.values() if not b.live), key=lambda b: b.removed_ts)[:over]
            for block in gone:
                del self._blocks[block.hash]

    def snapshot(self) -> EngineSnapshot:
        """A plain copy of the blocks known, the record and the counts, with the live prefix tree."""
        with self._lock:
            blocks = {k: EngineBlock(b.hash, b.parent, b.token_ids, b.stored_ts, b.removed_ts)
                      for k, b in self._blocks.items()}
            events, counts, size = list(self._events), dict(self.counts), self._block_size
        children: dict[str | None, list[str]] = {}
        for block in blocks.values():
            if block.live:
                children.setdefault(block.parent, []).append(block.hash)
        return EngineSnapshot(counts["batches"] > 0, size, blocks, children, events, counts)


class KVEventSubscriber:
    """A SUB socket bound to the operator's endpoint, and a daemon thread feeding what arrives to `blocks`.

    The endpoint comes from the server's command line or environment only. Bind it before the engine starts, or
    at least before the events one wants: ZMQ reconnects the engine's PUB, but drops what was sent while unbound.
    ValueError when the address cannot be bound.
    """

    def __init__(self, endpoint: str, topic: str = "", blocks: EngineBlocks | None = None):
        import zmq

        self.endpoint = endpoint
        self.blocks = blocks or EngineBlocks()
        self._ctx = zmq.Context.instance()
        self._sock = self._ctx.socket(zmq.SUB)
        self._sock.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self._sock.setsockopt(zmq.LINGER, 0)
        try:
            self._sock.bind(endpoint)
        except zmq.ZMQError as err:  # in use, not an address of this machine, not tcp://host:port
            self._sock.close(linger=0)
            raise ValueError(f"cannot bind {endpoint}: {err}") from None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="kv-events", daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        import zmq

        while not self._stop.is_set():
            try:
                if not self._sock.poll(POLL_MS):
                    continue
                frames = self._sock.recv_multipart()
            except zmq.ZMQError:
                if self._stop.is_set():
                    break
                raise
            if len(frames) != 3 or len(frames[1]) != 8:  # not (topic, 8-byte sequence number, payload)
                self.blocks.skip()
                continue
            self.blocks.feed(int.from_bytes(frames[1], "big"), frames[2])
        self._sock.close(linger=0)

    def snapshot(self) -> EngineSnapshot:
        """What the events said so far (EngineBlocks.snapshot)."""
        return self.blocks.snapshot()

    def close(self) -> None:
        """Stop receiving; the socket is closed by its thread."""
        self._stop.set()
        self._thread.join(timeout=2)


# ---- the engine's blocks beside this app's block model -------------------------------------------------------
@dataclass
class EngineRow:
    """One session's chain on the engine: its label (never its text), its tokens, its full blocks at the engine's
    block size, and per engine block holding its prefix: the short hash, shared with another session, removed."""

    label: str
    tokens: int
    full_blocks: int
    hashes: list[str]
    shared: list[bool]
    removed: list[bool]


@dataclass
class EngineBlocksView:
    """The engine's blocks for the sessions given, and this app's block model of the same texts at the engine's
    block size (model/speed/paged.py's chained hashes): how many full blocks each says two or more sessions share.

    engine_shared: distinct engine blocks in two or more chains; model_shared: the same count by the app's model;
    agree: the two counts are equal. live / removed_seen: the engine's live blocks and the removals in the record.
    """

    block_size: int
    rows: list[EngineRow]
    engine_shared: int
    model_shared: int
    live: int
    removed_seen: int
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        return self.engine_shared == self.model_shared


def engine_blocks_view(snapshot: EngineSnapshot, sessions: Sequence[tuple[str, Sequence[int]]]) -> EngineBlocksView | None:
    """Each session's (label, token ids) chain of engine blocks, and the shared counts of the engine and of the app's
    model; None when no block was ever stored (nothing heard, or only removals): nothing to compare."""
    size = snapshot.block_size
    if not size:
        return None
    chains = [snapshot.chain(ids) for _, ids in sessions]
    shared = shared_blocks([c.hashes for c in chains])
    model = shared_blocks([block_hashes(ids, size) for _, ids in sessions])
    rows = [EngineRow(label, len(ids), chain.full_blocks, [h[:SHORT_HEX] for h in chain.hashes],
                      [h in shared for h in chain.hashes], chain.removed)
            for (label, ids), chain in zip(sessions, chains)]
    return EngineBlocksView(size, rows, len(shared), len(model), snapshot.live_count(),
                            sum(e.kind == "removed" for e in snapshot.events), snapshot.counts)
