"""The Heads across a corpus page as a user reaches it: its examples are `corpus_summary`'s own, the user's
text changes them, hostile text gets a message, and a bad link falls back with a notice."""

import numpy as np

from apptest_helpers import chart_titled, charts
from apptest_helpers import open_page as open_at
from model import load_model
from model.corpus_heads import classroom_sentences
from model.heads import corpus_summary
from model.own_text import corpus_sentences

PAGE = "pages/12_Corpus.py"
TOP = 100  # ui.corpus.TOP
OWN = (
    "The river ran past the old mill. A heron stood in the reeds and waited.\n"
    "Children threw stones into the water. The miller counted his sacks of flour twice.\n"
    "At dusk the bank was quiet, and the boats were tied up for the night."
)


def open_page(query=None, first_notices=None):
    return open_at(PAGE, query, first_notices)


def examples_shown(at):
    """The top-examples chart's weights and the table's (rank, weight) rows."""
    spec = chart_titled(at, ["its strongest weights over"])
    bars = [t for t in spec["data"] if t["type"] == "bar"][0]
    table = at.dataframe[0].value
    return np.asarray(bars["x"], dtype=float), table


def test_the_examples_shown_are_the_summarys_own():
    expected = corpus_summary(load_model("toy"), classroom_sentences(), top=TOP).top_examples(1, 2)
    at = open_page({"layer": "1", "heads": "2"})
    weights, table = examples_shown(at)
    np.testing.assert_allclose(weights, [w for *_, w in expected[:20]], rtol=1e-6)
    assert table["rank"].tolist() == list(range(1, 21))
    np.testing.assert_allclose(table["weight"], [round(w, 4) for *_, w in expected[:20]], atol=1e-6)
    assert table["sentence"].tolist() == [s + 1 for s, *_ in expected[:20]]
    assert chart_titled(at, ["Layer 1, head 2", "over 500 sentences"])

    at.button(key="corpus_next").click().run()  # the next page: examples 21–40, and the link follows
    weights, table = examples_shown(at)
    assert table["rank"].tolist() == list(range(21, 41)) and at.query_params["cpage"] == "1"
    np.testing.assert_allclose(weights, [w for *_, w in expected[20:40]], rtol=1e-6)


def test_own_text_replaces_the_classroom_and_a_second_head_is_drawn_beside():
    model = load_model("toy")
    pasted = corpus_sentences(OWN)
    expected = corpus_summary(model, pasted.sentences, top=TOP).top_examples(0, 1)
    at = open_page({"heads": "1"})
    before, _ = examples_shown(at)
    at.button_group(key="w_corpus").set_value("own text").run()
    assert not charts(at) and any("Paste a text" in i.value for i in at.info)  # nothing to read yet
    at.text_area(key="corpus_own_text").set_value(OWN).run()
    assert not at.exception and not at.error
    weights, table = examples_shown(at)
    assert chart_titled(at, [f"over {len(pasted.sentences)} sentences"])
    np.testing.assert_allclose(weights, [w for *_, w in expected[:20]], rtol=1e-6)
    assert len(weights) != len(before) or not np.allclose(weights, before)
    assert at.query_params["corpus"] == "own text" and OWN[:20] not in str(dict(at.query_params))  # the text stays out of the link

    at.selectbox(key="w_compare").set_value("1.0").run()
    assert chart_titled(at, ["Mean weight by offset: layer 0, head 1 beside layer 1, head 0"])
    assert at.query_params["cmp"] == "1.0"


def test_hostile_text_gets_a_message_or_a_clean_result():
    at = open_page({"corpus": "own text"})
    at.text_area(key="corpus_own_text").set_value("\x00\x01\x02\x03" * 500).run()
    assert not at.exception and not at.error
    assert any("looks like binary data" in w.value for w in at.warning) and not charts(at)

    at.text_area(key="corpus_own_text").set_value("<b>" + "word " * 3000 + "</b>\n<script>alert(1)</script> = the cat sat.").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("markup tag" in i.value for i in at.info)
    assert chart_titled(at, ["its strongest weights over"])

    at.text_area(key="corpus_own_text").set_value("hi\nok").run()  # no sentence of three words
    assert not at.exception and not at.error
    assert any("No usable sentence" in w.value for w in at.warning) and not charts(at)


def test_bad_link_values_fall_back_with_a_notice():
    notices = []
    at = open_page({"corpus": "library", "cstat": "loudness", "cmp": "x.y", "layer": "1"}, notices)
    shown = " ".join(notices).replace("\\", "")
    assert "“corpus” ('library') is not valid" in shown and "“cstat” ('loudness') is not valid" in shown and "“cmp” ('x.y') is not valid" in shown
    assert chart_titled(at, ["over 500 sentences"]) and chart_titled(at, ["Every head of toy: previous token"])

    at = open_page({"cmp": "7.0", "cpage": "40"})  # a head the toy does not have, a page beyond the examples
    texts = " ".join(i.value for i in at.info).replace("\\", "")
    assert "This model has no layer 7, head 0; no head is compared." in texts
    assert "There are 5 page(s) of examples; showing the last." in texts
    assert at.query_params["cpage"] == "4" and "cmp" not in at.query_params
    _, table = examples_shown(at)
    assert table["rank"].tolist() == list(range(81, 101))
