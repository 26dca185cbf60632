"""A model of vLLM's paged KV-cache allocator, computed from this server's real session lengths and prompt ids.

PagedAttention (Kwon et al. 2023) keeps each sequence's K and V in fixed blocks of 16 tokens (vLLM's default)
listed in a block table: a sequence takes blocks as it grows, so it wastes less than one block, where a
contiguous allocator reserves the maximum length for every sequence up front. With prefix caching, a full block
is found by a hash of its tokens and of every token before it, so sequences that begin with the same full
blocks share them; a partly filled block is never shared. This file only counts: no model, no allocation.

Privacy: token ids are used only to hash blocks; the records hold counts, lengths and bytes, never ids or text.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from model.errors import SessionError
from model.decoding.kv import kv_cache_bytes
from model.decoding.records import ModelInfo

BLOCK_SIZE = 16  # tokens per block: vLLM's default --block-size


@dataclass
class SessionBlocks:
    """One session's row of the block table."""

    label: str  # the caller's name for the session (viz.t("paged_you")), never its text; "" = viz draws "session n"
    tokens: int  # tokens its cache holds
    blocks: int  # blocks its table lists: ceil(tokens / block_size)
    shared: list[bool]  # per block: True if another session's table lists the same physical block
    used_bytes: int  # tokens x bytes per token
    allocated_bytes: int  # blocks x block_size x bytes per token
    waste_bytes: int  # allocated - used: the empty slots of its last, partly filled block
    reserved_bytes: int  # a contiguous allocator's reservation: max_tokens x bytes per token
    last_block_fill: int  # tokens in its last block (block_size when it is full; 0 for an empty session)


@dataclass
class PagedLayout:
    """Every session's blocks under the model, and the totals against contiguous allocation."""

    block_size: int  # tokens per block
    bytes_per_token: int  # 2 x layers x kv_heads x head_dim x bytes per value (model/decoding/kv.py's formula)
    max_tokens: int  # what a contiguous allocator reserves per session
    sessions: list[SessionBlocks]  # in the order given
    physical_blocks: int  # distinct blocks in memory: each shared block counted once
    table_blocks: int  # blocks over all tables, a shared one once per table (= physical without sharing)
    used_bytes: int  # tokens held, over all sessions (a shared token once per session)
    held_bytes: int  # tokens held in memory: used_bytes with each shared block's tokens counted once
    allocated_bytes: int  # physical_blocks x block bytes: paged, with prefix sharing
    unshared_bytes: int  # table_blocks x block bytes: paged, without prefix sharing
    shared_saving_bytes: int  # unshared_bytes - allocated_bytes: what prefix sharing saves
    waste_bytes: int  # the empty slots of last blocks, over all sessions
    reserved_bytes: int  # contiguous: sessions x max_tokens x bytes per token

    @property
    def block_bytes(self) -> int:
        return self.block_size * self.bytes_per_token


def bytes_per_token(info: ModelInfo) -> int:
    """K and V of one token over every layer: model/decoding/kv.py's formula for one token."""
    return kv_cache_bytes(info.layers, info.kv_heads, info.head_dim, 1, info.bytes_per_value)


def block_hashes(ids: Sequence[int], block_size: int = BLOCK_SIZE) -> list[bytes]:
    """The hash of each full block of ids, chained: block i's hash covers its own tokens and every token before it.

    As vLLM's prefix cache keys a block (hash of the parent block's hash and this block's token ids), so two
    sequences share block i only if they agree on all tokens up to its end.
    """
    out, parent = [], b""
    for start in range(0, len(ids) - block_size + 1, block_size):
        block = ",".join(str(int(t)) for t in ids[start : start + block_size]).encode()
        parent = hashlib.sha256(parent + b"|" + block).digest()
        out.append(parent)
    return out


def paged_layout(sessions: Sequence[tuple[str, int, Sequence[int]]], info: ModelInfo, max_tokens: int,
                 block_size: int = BLOCK_SIZE, share_prefixes: bool = True) -> PagedLayout:
    """The block table of each session and the totals, from (label, tokens held, leading token ids) per session.

    The leading ids are whatever of the session's text is known to the caller (its prompt, or all of it): only
    full blocks lying inside them can be shared; the others are the session's own. max_tokens is what a
    contiguous allocator reserves per session (this server's MAX_TOKENS).
    """
    if not isinstance(block_size, int) or block_size < 1:
        raise SessionError("paged_block_size_invalid", value=block_size)
    per_token = bytes_per_token(info)
    rows, keys = [], []  # keys: per session, one key per block (a hash, or a key of its own)
    for n, (label, tokens, ids) in enumerate(sessions):
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < len(ids) or tokens > max_tokens:
            raise SessionError("paged_length_invalid", label=label, tokens=tokens, known=len(ids), limit=max_tokens)
        blocks = -(-tokens // block_size)
        hashes = block_hashes(ids, block_size) if share_prefixes else []
        keys.append([hashes[i] if i < len(hashes) else (n, i) for i in range(blocks)])
        used = tokens * per_token
        allocated = blocks * block_size * per_token
        rows.append(SessionBlocks(label, tokens, blocks, [], used, allocated, allocated - used,
                                  max_tokens * per_token, tokens - (blocks - 1) * block_size if blocks else 0))
    tables = {}  # block key -> how many tables list it
    for session_keys in keys:
        for key in session_keys:
            tables[key] = tables.get(key, 0) + 1
    for row, session_keys in zip(rows, keys):
        row.shared = [tables[key] > 1 for key in session_keys]
    block_bytes = block_size * per_token
    table_blocks = sum(r.blocks for r in rows)
    return PagedLayout(
        block_size=block_size,
        bytes_per_token=per_token,
        max_tokens=max_tokens,
        sessions=rows,
        physical_blocks=len(tables),
        table_blocks=table_blocks,
        used_bytes=sum(r.used_bytes for r in rows),
        held_bytes=sum(r.used_bytes for r in rows) - (table_blocks - len(tables)) * block_bytes,  # shared blocks are full
        allocated_bytes=len(tables) * block_bytes,
        unshared_bytes=table_blocks * block_bytes,
        shared_saving_bytes=(table_blocks - len(tables)) * block_bytes,
        waste_bytes=sum(r.waste_bytes for r in rows),
        reserved_bytes=len(rows) * max_tokens * per_token,
    )
