"""Loading: offline first, fast and clear failures, safetensors only."""

import re
import shutil
import time

import huggingface_hub.constants
import pytest

from model import ModelLoadError, load_model
from model.loading import hub_reachable


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    return tmp_path


def test_missing_model_offline_fails_fast_with_instructions(empty_hub_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(ModelLoadError) as error:
        load_model("distilbert-base-uncased")
    assert time.monotonic() - start < 5
    message = str(error.value)
    assert "not in the local cache" in message and "once" in message and "folder" in message


def test_unreachable_hub_fails_within_seconds(empty_hub_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # a closed port on this machine
    assert not hub_reachable()
    start = time.monotonic()
    with pytest.raises(ModelLoadError, match="cannot be reached"):
        load_model("distilbert-base-uncased")
    assert time.monotonic() - start < 10


def test_cached_hub_model_is_found_without_network(empty_hub_cache, tiny_model_dir, monkeypatch):
    """A model in the Hub cache layout loads by its id with HF_HUB_OFFLINE set."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    repo = empty_hub_cache / "hf" / "hub" / "models--someone--tiny-bert"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_model_dir("bert"), snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    model = load_model("someone/tiny-bert")
    assert model.n_layers == 2 and model.n_heads == 3


def test_pickle_only_folder_is_refused(tmp_path, tiny_model_dir):
    folder = tmp_path / "pickled"
    shutil.copytree(tiny_model_dir("distilbert"), folder)
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="pickle"):
        load_model(str(folder))


def test_empty_and_corrupt_folders(tmp_path, tiny_model_dir):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelLoadError, match="config.json"):
        load_model(str(tmp_path / "empty"))
    corrupt = tmp_path / "corrupt"
    shutil.copytree(tiny_model_dir("bert"), corrupt)
    (corrupt / "config.json").write_text("{ not json")
    with pytest.raises(ModelLoadError, match="config.json"):
        load_model(str(corrupt))
    broken_weights = tmp_path / "broken"
    shutil.copytree(tiny_model_dir("bert"), broken_weights)
    (broken_weights / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(ModelLoadError, match="could not be loaded"):
        load_model(str(broken_weights))


def test_unsupported_architecture(tmp_path):
    folder = tmp_path / "t5"
    folder.mkdir()
    (folder / "config.json").write_text('{"model_type": "t5"}')
    (folder / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="supported families: DistilBERT, BERT, GPT-2, Llama, Qwen2, Mistral, Gemma"):
        load_model(str(folder))


def test_local_folders_can_be_turned_off(tiny_model_dir):
    with pytest.raises(ModelLoadError, match="turned off"):
        load_model(str(tiny_model_dir("bert")), allow_local=False)


@pytest.mark.parametrize("name", ["../../etc", "http://evil.example/x", "a b c", "x" * 300])
def test_names_that_are_neither_folder_nor_hub_id(name):
    with pytest.raises(ModelLoadError):
        load_model(name, allow_local=False)


TO_ROOT = "model/" + "../" * 12  # from the project folder (or any folder less deep) up to "/"


@pytest.mark.parametrize(
    ("existing", "missing"),
    [
        (TO_ROOT + "etc/hostname", TO_ROOT + "etc/no-such-file"),
        (TO_ROOT + "etc", TO_ROOT + "no-such-folder"),
        ("/etc/hostname", "/etc/no-such-file"),
        ("./model", "./no-such-folder"),
        ("deploy", "no-such-folder"),
        ("tests", "no-such-tests"),
        ("model/checkpoints", "model/no-such-checkpoints"),
    ],
)
def test_with_local_folders_off_the_answer_does_not_depend_on_the_disk(existing, missing, empty_hub_cache, monkeypatch):
    """The model box and a link's model id answer an existing path and a missing one alike (with the name
    itself, and the folder name offered for a Hub download, left out of the comparison): no probing of the server's files."""
    from conftest import ROOT
    from model.loading import check_model

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert (ROOT / existing).exists() and not (ROOT / missing).exists()
    for ask in (check_model, load_model):
        answers = []
        for name in (existing, missing):
            with pytest.raises(ModelLoadError) as refused:
                ask(name, allow_local=False)
            answers.append(re.sub(r"--local-dir \S+", "--local-dir LAST", str(refused.value).replace(name, "NAME")))
        assert answers[0] == answers[1], ask.__name__


def test_with_local_folders_off_a_model_folder_is_refused_like_any_other_path(tiny_model_dir):
    from model.loading import check_model

    folder = tiny_model_dir("bert")
    for ask in (check_model, load_model):
        with pytest.raises(ModelLoadError) as refused:
            ask(str(folder), allow_local=False)
        assert str(refused.value) == f"{str(folder)!r} is not a built-in model or a Hugging Face Hub id (like 'distilbert-base-uncased'); " + (
            "loading models from local folders is turned off on this server (ATTENTION_VIZ_ALLOW_LOCAL=1 turns it on)."
        )
    assert check_model(str(folder), allow_local=True) == str(folder)
