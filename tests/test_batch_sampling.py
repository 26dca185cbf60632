"""The batch's sampler gives every row the record derive() gives it, on the same logits, settings and u (issue 31)."""
import dataclasses
import itertools
import math

import pytest
import torch

from model.decoding.batch_sampling import SampleRow, derive_batch
from model.decoding.records import SamplingConfig, TokenInfo
from model.decoding.sampling import derive
from model.errors import SessionError

pytestmark = pytest.mark.unit

VOCAB = 49_152  # SmolLM2's vocabulary
TOLERANCE = 1e-6


class Ids:
    """Token display for a vocabulary without a tokenizer: the id as text."""

    def info(self, i):
        return TokenInfo(int(i), f"t{i}", f"t{i}")


def logits_like_a_model(seed: int) -> torch.Tensor:
    """(V,) float32 scores shaped like a language model's: a broad body and a few dozen tokens well above it."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(VOCAB, generator=g) * 2.0
    head = torch.randint(0, VOCAB, (40,), generator=g)
    z[head] += 8.0 + 6.0 * torch.rand(40, generator=g)
    return z


def context_for(z: torch.Tensor, seed: int) -> list[int]:
    """A text of 60 ids, some of them among the most probable (so the repetition penalty moves the head)."""
    g = torch.Generator().manual_seed(seed)
    likely = torch.topk(z, 10).indices[torch.randint(0, 10, (8,), generator=g)]
    return torch.cat([torch.randint(0, VOCAB, (52,), generator=g), likely]).tolist()


def allowed_for(z: torch.Tensor, seed: int) -> torch.Tensor:
    """A constraint's (V,) mask: a third of the vocabulary, the most probable token not among it."""
    g = torch.Generator().manual_seed(seed)
    allowed = torch.rand(VOCAB, generator=g) < 0.33
    allowed[int(z.argmax())] = False
    return allowed


# every combination the issue names: both orders, each of penalty, top-k, top-p and min-p on and off, T = 1, 0.7 and 0,
# with and without a constraint, drawn or forced (a token of the head, or the least probable one)
COMBINATIONS = list(itertools.product(
    ["transformers", "temperature_last"], [1.0, 0.7, 0.0], [1.0, 1.3], [0, 10], [1.0, 0.9], [0.0, 0.05],
    [False, True], [False, True]))


def row_for(i: int, combination) -> tuple[torch.Tensor, SampleRow]:
    order, temperature, penalty, top_k, top_p, min_p, constrained, forced = combination
    z = logits_like_a_model(i)
    cfg = SamplingConfig(temperature=temperature, top_k=top_k, top_p=top_p, min_p=min_p, repetition_penalty=penalty,
                         order=order, seed=i % 5)
    token = (int(torch.topk(z, 3).indices[2]) if i % 2 else int(z.argmin())) if forced else None
    context = context_for(z, i)
    return z, SampleRow(context, cfg, len(context) + i % 7, Ids(), token, allowed_for(z, i) if constrained else None)


def reference(z: torch.Tensor, row: SampleRow):
    return derive(z, torch.tensor([row.context]), row.cfg, row.position, row.tokens, row.force_token,
                  row.top_n, row.allowed)


@pytest.fixture(scope="module")
def combinations():
    """Every combination's row and derive()'s record of it, once for the module."""
    rows = [row_for(i, combination) for i, combination in enumerate(COMBINATIONS)]
    return rows, [reference(z, row) for z, row in rows]


def differences(a, b, path="distribution") -> list[str]:
    """Every field where two records differ: numbers beyond TOLERANCE, anything else not equal."""
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return [d for f in dataclasses.fields(a)
                for d in differences(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")]
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b):
        return [d for k in a for d in differences(a[k], b[k], f"{path}[{k!r}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if math.isclose(a, b, rel_tol=0, abs_tol=TOLERANCE) else [f"{path}: {a!r} != {b!r}"]
    return [] if type(a) is type(b) and a == b else [f"{path}: {a!r} != {b!r}"]


def check(batch: list[tuple[torch.Tensor, SampleRow]], expected=None):
    dists = derive_batch(torch.stack([z for z, _ in batch]), [row for _, row in batch])
    expected = expected or [reference(z, row) for z, row in batch]
    for (z, row), want, dist in zip(batch, expected, dists):
        assert differences(want, dist) == [], (row.cfg, row.force_token, row.allowed is not None)
    return dists


def test_every_combination_alone_is_derives_record(combinations):
    rows, expected = combinations
    for row, want in zip(rows, expected):
        check([row], [want])


def test_every_combination_in_batches_of_16_is_derives_record(combinations):
    rows, expected = combinations
    for start in range(0, len(rows), 16):
        check(rows[start : start + 16], expected[start : start + 16])


def test_sixteen_rows_with_the_same_stages_and_their_own_settings():
    """One group (the same stages on) whose rows differ in every setting's value: each row's own parameters."""
    batch = []
    for i in range(16):
        z = logits_like_a_model(100 + i)
        cfg = SamplingConfig(temperature=0.3 + 0.15 * i, top_k=5 + 7 * i, top_p=0.5 + 0.03 * i, min_p=0.01 * (i + 1),
                             repetition_penalty=0.8 + 0.1 * i, order="temperature_last" if i % 2 else "transformers",
                             seed=i)
        context = context_for(z, i)
        batch.append((z, SampleRow(context, cfg, len(context), Ids())))
    check(batch)
    plain = [(z, dataclasses.replace(row, cfg=SamplingConfig(seed=row.cfg.seed))) for z, row in batch]
    check(plain)  # the class's usual settings: every stage off


def test_the_rows_are_not_all_alike(combinations):
    """The combinations reach every fate and both kinds of chosen token, so the equality above means something."""
    _, dists = combinations
    fates = {c.fate for d in dists for c in d.candidates}
    assert fates == {"chosen", "kept", "top_k", "top_p", "min_p", "greedy", "grammar"}
    assert any(d.draw_cum_before is None for d in dists) and any(d.chosen_rank > 20 for d in dists)
    assert len({d.chosen.id for d in dists}) > 100


def test_a_difference_is_found():
    z, row = row_for(3, COMBINATIONS[40])
    dist = reference(z, row)
    moved = dataclasses.replace(dist, tail_mass_final=dist.tail_mass_final + 2e-6)
    assert differences(dist, moved) == [f"distribution.tail_mass_final: {dist.tail_mass_final!r} != "
                                        f"{moved.tail_mass_final!r}"]
    assert differences(dist, dataclasses.replace(dist, candidates=dist.candidates[::-1]))


def test_a_setting_out_of_range_is_refused_as_derive_refuses_it():
    z, row = row_for(0, COMBINATIONS[0])
    for bad, key in [(dataclasses.replace(row, cfg=SamplingConfig(top_p=1.5)), "top_p_range"),
                     (dataclasses.replace(row, force_token=VOCAB), "forced_token_invalid")]:
        with pytest.raises(SessionError) as batched:
            derive_batch(torch.stack([z, z]), [row, bad])
        with pytest.raises(SessionError) as alone:
            reference(z, bad)
        assert batched.value.key == alone.value.key == key
