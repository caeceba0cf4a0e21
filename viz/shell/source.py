"""The views' Source backed by the shared caches of viz/shell/services.py (every session reads the same entries)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from model.analysis.long_heads import long_metrics
from model.io.catalog import ModelSpec
from model.io.state import LoadedModel
from model.long import LongObservation
from model.observe import ATTENTION_KINDS, Observation, Options
from viz.shell.cache import CACHE
from viz.shell.research import (
    get_attribution_patching,
    get_circuit,
    get_composition,
    get_lens,
    get_logit_attribution,
    get_patching,
    get_path_patching,
    patching_todo,
)
from viz.shell.services import (
    get_attribution,
    get_flow,
    get_generation,
    get_induction,
    get_kinds,
    get_long_found,
    get_long_kinds,
    get_long_similarity,
    get_metrics,
    get_mixing,
    get_model,
    get_next_tokens,
    get_observation,
    get_padded_batch,
    get_permutation,
    get_predictions,
    get_profile,
    get_scaling_demo,
    get_similarity,
    get_steps,
    get_stream,
    upload_bytes,
)
from viz.views.base import ViewUnavailableError


@dataclass
class CachedSource:
    """The views' Source (viz/views/base.py) backed by the caches above, shared by every session."""

    spec: ModelSpec
    loaded: LoadedModel
    obs: Observation
    options: Options
    hide_special: bool
    device: str
    _long: weakref.ref | None = None  # the whole text, once a page read it (viz/shell/longrun.py), held weakly
    _long_key: tuple = ()

    def read_whole(self, long: LongObservation, key: tuple) -> None:
        """Views draw ``long`` (the shared cache's entry ``key``) from now on. Held weakly: a cached view's source
        must not keep 0.8 GB alive after the cache let it go."""
        self._long, self._long_key = weakref.ref(long), key

    @property
    def long(self) -> LongObservation | None:
        if self._long is None:
            return None
        found = self._long() or CACHE.peek(self._long_key)
        if found is None:
            raise ViewUnavailableError("The whole text left the server's cache: open its page again to read it.")
        return found

    def _key(self):
        return self.spec, self.device, self.obs.text, self.options

    def other(self, *, text=None, options=None, spec=None):
        spec = spec or self.spec
        loaded = self.loaded if spec == self.spec else get_model(spec, self.device, upload_bytes(spec))
        text = self.obs.text if text is None else text
        return get_observation(spec, self.device, text, options or self.options, loaded), loaded

    def metrics(self, *, spec=None, options=None) -> dict[str, np.ndarray]:
        spec, options = spec or self.spec, options or self.options
        if spec == self.spec and options == self.options:
            return long_metrics(self.long) if self.long is not None else self.obs.metrics
        return get_metrics(spec, self.device, self.obs.text, options, upload_bytes(spec))

    def full(self) -> Observation:
        """This text's observation with every attention kind captured (q, k, v, z, sublayer in/out)."""
        if self.obs.q is not None and self.obs.attn_in is not None:
            return self.obs
        return self.other(options=replace(self.options, kinds=ATTENTION_KINDS))[0]

    def similarity(self):
        if self.long is not None:
            return get_long_similarity(*self._key(), self.long)
        return get_similarity(*self._key(), self.hide_special, self.obs)

    def similarity_ready(self) -> bool:
        """Whether :meth:`similarity` is cached already (any session computed it): the page then shows it at once."""
        if self.long is not None:
            return get_long_similarity.cached(*self._key(), self.long)
        return get_similarity.cached(*self._key(), self.hide_special, self.obs)

    def flow(self):
        return get_flow(*self._key(), None, self.obs.patterns)

    def flow_token(self, token):
        return get_flow(*self._key(), int(token), self.obs.patterns)

    def mixing(self, value_zeroing):
        ids, options = tuple(self.obs.ids), self._run()
        return get_mixing(self.spec, self.device, ids, bool(value_zeroing), *options, self.loaded.model)

    def _run(self) -> tuple:
        """The mask, scaling, positions and heads off the attention pages draw with (a measure's run)."""
        return self.obs.causal, self.options.scale, self.options.positions, self.options.ablate

    def profile(self, path):
        meta = Path(path) / "meta.json"
        return get_profile(str(path), meta.stat().st_mtime if meta.is_file() else 0.0)

    def attribution(self, position, target):
        ids, options = tuple(self.obs.ids), self._run()
        return get_attribution(self.spec, self.device, ids, int(position), target, *options, self.loaded.model)

    def permutation(self, seed, positions, layer):
        special = tuple(bool(s) for s in self.obs.special)
        opts = self.obs.causal, self.options.scale, self.options.ablate  # as the pages draw: the sidebar's choices
        return get_permutation(
            self.spec, self.device, tuple(self.obs.ids), special, seed, positions, layer, *opts, self.loaded.model
        )

    def padded(self, text_b, layer):
        tok = self.loaded.tokenizer
        ids_b = tuple(tok.encode(text_b, max_len=self.loaded.model.cfg.max_seq_len).ids)
        return get_padded_batch(
            self.spec, self.device, tuple(self.obs.ids), ids_b, layer, tok.pad_id, self.loaded.model
        )

    def predictions(self, ids, positions, ablate):
        return get_predictions(self.spec, self.device, tuple(ids), tuple(positions), tuple(ablate), self.loaded)

    def scaling(self):
        return get_scaling_demo()

    def next_tokens(self, temperature):
        return get_next_tokens(*self._key(), float(temperature), self.obs, self.loaded)

    def generation(self, n_new, temperature, seed):
        ids = tuple((self.long or self.obs).ids)  # a text read whole is continued whole
        return get_generation(self.spec, self.device, ids, int(n_new), float(temperature), int(seed), self.loaded)

    def induction(self, period, seed):
        return get_induction(self.spec, self.device, int(period), int(seed), self.loaded)

    def kinds(self, spec=None, pair=None):
        spec = spec or self.spec
        if self.long is not None and spec == self.spec:
            return get_long_kinds(*self._key(), pair, self.long)
        mine = self.obs if spec == self.spec else None
        return get_kinds(spec, self.device, self.obs.text, self.options, pair, upload_bytes(spec), mine)

    def long_found(self, relation, queries, keys):
        return get_long_found(*self._key(), relation, tuple(queries), tuple(keys), self.long)

    def stream(self, spec=None):
        obs, loaded = self.other(spec=spec)
        spec = spec or self.spec
        return get_stream(spec, self.device, obs.text, self.options, tuple(obs.ids), loaded.model), obs

    def steps(self, layer, head):
        full = self.full()
        key = (self.spec, self.device, full.text, full.options)
        return get_steps(*key, layer, head, full, self.loaded.model)

    def lens(self, positions, target):
        ids = tuple(self.obs.ids)
        return get_lens(self.spec, self.device, ids, tuple(positions), target, self.loaded.model)

    def logit_attribution(self, target, foil, position):
        ids = tuple(self.obs.ids)
        return get_logit_attribution(self.spec, self.device, ids, target, foil, int(position), self.loaded.model)

    def patching(self, corrupted, metric, kinds, progress=None):
        clean = tuple(self.obs.ids)
        return get_patching(
            self.spec, self.device, clean, tuple(corrupted), metric, tuple(kinds), self.loaded.model, progress
        )

    def composition(self, layer, head, mode):
        return get_composition(self.spec, self.device, int(layer), int(head), mode, self.loaded.model)

    def patching_kept(self, corrupted, metric, kinds):
        """Activation patching's result on these prompts if everyone's cache holds every kind (nothing is run)."""
        return None if self.patching_todo(corrupted, metric, kinds) else self.patching(corrupted, metric, kinds)

    def attribution_patching(self, corrupted, metric, kinds):
        clean = tuple(self.obs.ids)
        args = (clean, tuple(corrupted), metric, tuple(kinds), self.loaded.model)
        return get_attribution_patching(self.spec, self.device, *args)

    def path_patching(self, corrupted, metric, receivers, progress=None):
        clean = tuple(self.obs.ids)
        args = (clean, tuple(corrupted), metric, receivers, self.loaded.model, progress)
        return get_path_patching(self.spec, self.device, *args)

    def path_patching_kept(self, corrupted, metric, receivers) -> bool:
        clean = tuple(self.obs.ids)
        args = (clean, tuple(corrupted), metric, receivers, self.loaded.model)
        return get_path_patching.cached(self.spec, self.device, *args)

    def patching_todo(self, corrupted, metric, kinds) -> tuple[str, ...]:
        """The kinds of this sweep nobody has run yet."""
        clean = tuple(self.obs.ids)
        return patching_todo(self.spec, self.device, clean, tuple(corrupted), metric, tuple(kinds), self.loaded.model)

    def needle(self, lengths, depths):
        """The needle runs a page started as a background job (viz/shell/needle.py), once they are done."""
        grid = CACHE.peek(needle_key(self.spec, self.device, lengths, depths))
        if grid is None:
            raise ViewUnavailableError("Run the haystacks first (the button above): they take a while.")
        return grid

    def circuit(self, layer, head, embedding=None):
        tokens = tuple(self.obs.ids)
        return get_circuit(self.spec, self.device, int(layer), int(head), tokens, embedding, self.loaded.model)


def needle_key(spec, device: str, lengths, depths) -> tuple:
    """The shared cache's key of a needle grid (the job that makes it uses it too)."""
    return ("needle", spec, device, tuple(lengths), tuple(depths))
