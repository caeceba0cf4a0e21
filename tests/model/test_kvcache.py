"""The KV cache's room (steps write in place, not a copy of every cached position) and grouped-query products."""

import torch

from model.attention import grouped
from model.kvcache import KVCache


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_grouped_matches_repeating_each_key_value_head():
    x, y = rand(2, 6, 5, 8, seed=1), rand(2, 3, 8, 7, seed=2)  # 6 query heads share 3 key/value heads
    want = x @ y.repeat_interleave(2, dim=1)  # (2, 6, 5, 7): heads 0, 1 read y's head 0, …
    torch.testing.assert_close(grouped(x, y), want)
    torch.testing.assert_close(grouped(x, y[:, :1]), x @ y[:, :1])  # one shared head (multi-query)
    assert torch.equal(grouped(x[:, :3], y), x[:, :3] @ y)  # as many heads: the plain product


def test_steps_agree_with_concatenation_and_earlier_results_keep_their_values():
    cache, keys, values = KVCache(1), [rand(1, 2, 9, 4, seed=3)], [rand(1, 2, 9, 4, seed=4)]
    returned = [cache.extend(0, keys[0], values[0])]
    for step in range(150):  # past the first room (9 + 1 + 64) and the next, so the room is reallocated
        keys.append(rand(1, 2, 1, 4, seed=10 + step))
        values.append(rand(1, 2, 1, 4, seed=1000 + step))
        returned.append(cache.extend(0, keys[-1], values[-1]))
    assert cache.length == 159
    for n, (k, v) in enumerate(returned):  # every step's result, read after all the later steps
        torch.testing.assert_close(k, torch.cat(keys[: n + 1], dim=-2), rtol=0, atol=0)
        torch.testing.assert_close(v, torch.cat(values[: n + 1], dim=-2), rtol=0, atol=0)


def test_an_entry_set_from_outside_is_copied_not_written_into():
    cache = KVCache(2)
    cache.extend(1, rand(1, 2, 3, 4, seed=5), rand(1, 2, 3, 4, seed=6))
    cache.extend(1, rand(1, 2, 1, 4, seed=7), rand(1, 2, 1, 4, seed=8))  # the room exists now
    start = (rand(1, 2, 2, 4, seed=9), rand(1, 2, 2, 4, seed=10))  # e.g. patching's tiled prefix
    kept = tuple(t.clone() for t in start)
    cache.layers[1] = start
    k, v = cache.extend(1, rand(1, 2, 1, 4, seed=11), rand(1, 2, 1, 4, seed=12))
    assert k.shape == (1, 2, 3, 4) and torch.equal(k[..., :2, :], kept[0]) and torch.equal(v[..., :2, :], kept[1])
    assert torch.equal(start[0], kept[0]) and torch.equal(start[1], kept[1])  # the caller's tensors untouched
    assert cache.cached(0) == 0 and cache.cached(1) == 3


def test_a_truncated_cache_keeps_its_beginning_and_never_writes_where_an_earlier_result_reads():
    cache, keys, values = KVCache(2), rand(1, 2, 6, 4, seed=11), rand(1, 2, 6, 4, seed=12)
    cache.extend(0, keys, values)
    step = (rand(1, 2, 1, 4, seed=13), rand(1, 2, 1, 4, seed=14))
    earlier = cache.extend(0, *step)  # (1, 2, 7, 4), a view of the room
    held = tuple(t.clone() for t in earlier)
    cache.truncate(3)
    assert cache.cached(0) == 3 and cache.cached(1) == 0 and cache.layers[1] is None  # a layer never filled stays so
    torch.testing.assert_close(cache.layers[0][0], keys[..., :3, :], rtol=0, atol=0)
    new = (rand(1, 2, 2, 4, seed=15), rand(1, 2, 2, 4, seed=16))
    k, v = cache.extend(0, *new)  # positions 3 and 4 again, different tokens
    torch.testing.assert_close(k, torch.cat([keys[..., :3, :], new[0]], dim=-2), rtol=0, atol=0)
    torch.testing.assert_close(v, torch.cat([values[..., :3, :], new[1]], dim=-2), rtol=0, atol=0)
    for got, want in zip(earlier, held):
        torch.testing.assert_close(got, want, rtol=0, atol=0)  # the step's result still reads its own positions
    cache.truncate(0)
    assert cache.layers == [None, None] and cache.length == 0
