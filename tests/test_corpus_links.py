"""From the Corpus page to the Attention page: each top example's link carries its sentence, the model, the
layer and head, and its query and key; the link opens the Attention page with that query pinned on the same
token and that cell's weight equal to the example's, on the toy model and on a BERT whose first token is [CLS]."""

import json
from urllib.parse import parse_qsl, urlsplit


from apptest_helpers import chart_titled, heatmaps, open_page
from model import load_model
from model.corpus_heads import classroom_sentences, heldout_sentences
from model.heads import corpus_summary
from viz.content.corpus import example_view, examples_range, examples_section
from viz.content.settings import SESSION_MODEL, Settings

CORPUS = "pages/12_Corpus.py"
ATTENTION = "pages/3_Attention.py"
TOP = 100  # ui.corpus.TOP


def links_shown(at) -> list[dict[str, str]]:
    """The query string of each example's link in the examples' table, which opens the Attention page."""
    table = at.dataframe[0].value
    parts = [urlsplit(link) for link in table["open"]]
    assert {part.path for part in parts} == {"Attention"}
    return [dict(parse_qsl(part.query)) for part in parts]


def head_view(at) -> dict:
    """What the Attention page's head view draws: its tokens and the pinned row."""
    [element] = [e for e in at.get("bidi_component") if e.proto.component_name == "attention_viz.head_view"]
    return json.loads(element.proto.json)


def check_landing(link: dict, expected: tuple, tokens: list[str], layer: int, head: int, model_name: str) -> None:
    """The Attention page opened with `link`: the example's sentence, the query pinned on its token, and the
    weight of (query, key) in the softmax panel, the pinned row and the worked example all the example's."""
    _, query, key, weight = expected
    at = open_page(ATTENTION, link)
    assert at.sidebar.text_area(key="w_text").value == link["text"]
    view = head_view(at)
    assert view["tokens"] == tokens  # the positions land on the tokens the corpus summary counted
    assert view["row"]["query"] == query
    assert abs(view["row"]["weights"][0][key] - weight) <= 1e-5
    softmax = heatmaps(chart_titled(at, [f"{model_name} · layer {layer} · head {head}"]))["softmax"]
    assert abs(softmax[query, key] - weight) <= 1e-5
    assert softmax.shape == (len(tokens), len(tokens))
    worked = [m.value for m in at.markdown if m.value.startswith("### A worked example")]
    assert f"Head {head}, layer {layer}: " in worked[0] and f"gives weight {weight:.4f}" in worked[0]


def test_an_examples_link_opens_it_on_the_attention_page_on_the_toy_model():
    sentences = heldout_sentences()  # 46 sentences: fast, and still five pages of examples
    summary = corpus_summary(load_model("toy"), sentences, top=TOP)
    expected = summary.top_examples(1, 2)
    at = open_page(CORPUS, {"corpus": "held-out", "layer": "1", "heads": "2", "cpage": "1"})
    links = links_shown(at)
    assert len(links) == 20
    for link, (sentence, query, key, _) in zip(links, expected[20:40]):
        assert link["text"] == sentences[sentence]
        assert (link["layer"], link["heads"], link["pin"], link["cell"]) == ("1", "2", str(query), f"{query},{key}")
        assert "model" not in link  # the toy, the default
    check_landing(links[0], expected[20], summary.sentence_tokens(expected[20][0]), 1, 2, "toy")

    box = at.selectbox(key="w_examples_page")  # the page box between the buttons: "41–60 of 100"
    assert box.value == 1 and box.options[2] == examples_range(2, 100) == "41–60 of 100"
    box.set_value(3).run()
    assert at.query_params["cpage"] == "3"
    assert at.dataframe[0].value["rank"].tolist() == list(range(61, 81))
    assert [link["pin"] for link in links_shown(at)] == [str(query) for _, query, _, _ in expected[60:80]]


def test_an_examples_link_keeps_the_positions_of_a_model_with_a_first_special_token(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("ATTENTION_VIZ_ALLOW_LOCAL", "1")
    folder = str(tiny_model_dir("bert"))
    sentences = heldout_sentences()
    summary = corpus_summary(load_model(folder), sentences, top=TOP)
    expected = summary.top_examples(1, 1)
    at = open_page(CORPUS, {"model": folder, "corpus": "held-out", "layer": "1", "heads": "1"})
    links = links_shown(at)
    assert [link["model"] for link in links] == [folder] * 20
    for link, (sentence, query, key, _) in zip(links, expected):
        assert link["text"] == sentences[sentence] and (link["pin"], link["cell"]) == (str(query), f"{query},{key}")
    later = next(i for i, (_, query, key, _) in enumerate(expected[:20]) if query > 1 and key > 0)  # neither next to [CLS]
    for i in {0, later}:
        tokens = summary.sentence_tokens(expected[i][0])
        assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
        check_landing(links[i], expected[i], tokens, 1, 1, folder.rsplit("/", 1)[-1])


def test_the_view_of_an_example_is_the_model_as_trained_on_its_sentence():
    what_if = Settings(model="toy-random", tokenizer="char", mask="none", hidden=((0, 1),), scaling=False, temperature=2.0, ablate=((0, 1),), words=True)
    view = example_view(what_if, "the cat sat .", 1, 3, 4, 2)
    assert (view.text, view.sentence, view.layer, view.heads, view.pinned, view.cell, view.focus) == ("the cat sat .", 0, 1, (3,), 4, (4, 2), 4)
    assert view.display.is_models_own and not view.words
    assert (view.model, view.tokenizer) == ("toy-random", "char")


def test_a_model_trained_in_the_session_gets_no_link():
    model = load_model("toy-random", n_layers=1, n_heads=2, d_model=16, seed=1)
    sentences = classroom_sentences(8)
    summary = corpus_summary(model, sentences, top=5)
    linked = examples_section(summary, 0, 1, view=Settings(model="toy-random"), sentences=sentences).tables["top-examples"]
    assert len(linked["open"]) == 5 and linked["open"].str.startswith("Attention?text=").all()
    session = examples_section(summary, 0, 1, view=Settings(model=SESSION_MODEL), sentences=sentences).tables["top-examples"]
    assert "open" not in session
